# expect: pass
from multiprocessing import Pool
def sq(x):
    return x * x
if __name__ == "__main__":
    with Pool(2) as p:
        print(sum(p.map(sq, range(100))))
