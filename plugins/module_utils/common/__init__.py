"""What every step shares: atomic file writes. Imports nothing else of module_utils."""
