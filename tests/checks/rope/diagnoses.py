"""placeholder"""

PROBES = {}
MISTAKES = {}
