# a leftover line from experimenting
print(scores_for_cat)
