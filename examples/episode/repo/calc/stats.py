"""Small statistics helpers."""


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    if n % 2:
        return s[mid]
    # bug: the mean of the two middle values is wanted
    return s[mid]


def clamp(x, lo, hi):
    return max(lo, min(x, hi))
