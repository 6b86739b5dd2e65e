split_heads = None  # "I'll write it later"
