"""The checks of lesson rope: every test_*.py here (and in hidden/) is collected by pytest."""
