# SPDX-License-Identifier: GPL-3.0-or-later
"""What every step shares: atomic file writes, name validators, process identity (the recorded start
of a background process), progress lines, and running code in a named network namespace.

Imports from module_utils: nothing else."""
