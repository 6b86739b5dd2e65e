# The student deleted split_heads (or never wrote it).
del split_heads
