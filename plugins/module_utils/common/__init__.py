# SPDX-License-Identifier: GPL-3.0-or-later
"""What every step shares: atomic file writes. Imports nothing else of module_utils."""
