"""placeholder"""

TOKENS = ("a",)
PICTURES = {}
