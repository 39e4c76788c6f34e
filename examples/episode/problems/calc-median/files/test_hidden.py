import unittest

from calc.stats import median


class Hidden(unittest.TestCase):
    def test_median_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_median_odd(self):
        self.assertEqual(median([5, 1, 3]), 3)

    def test_median_negative(self):
        self.assertEqual(median([-2, -1]), -1.5)


if __name__ == "__main__":
    unittest.main()
