# SPDX-License-Identifier: GPL-3.0-or-later
"""What every step shares: atomic file writes, name validators, process identity (the recorded start
of a background process), progress lines, running code in a named network namespace, and the table
of facts many files spell (test bed ports and addresses, results root, artifact directories, pkt_size
default and bounds).

Imports from module_utils: nothing else."""
