#include <cstdio>
#include <vector>
// testlib convention: checker input output answer; 0 OK, 1 WA, 2 PE, 3 fail.
int main(int argc, char **argv) {
	if (argc < 4) return 3;
	FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "r");
	if (!in || !out) return 3;
	int n;
	if (fscanf(in, "%d", &n) != 1) return 3;
	std::vector<int> seen(n + 1, 0);
	for (int i = 0; i < n; i++) {
		int x;
		if (fscanf(out, "%d", &x) != 1) { fprintf(stderr, "too few numbers\n"); return 2; }
		if (x < 1 || x > n || seen[x]++) { fprintf(stderr, "not a permutation at %d\n", i + 1); return 1; }
		if (i % 2 == 0 && x % 2 == 0 && n > 1) { fprintf(stderr, "position %d must be odd\n", i + 1); return 1; }
	}
	int extra;
	if (fscanf(out, "%d", &extra) == 1) { fprintf(stderr, "extra output\n"); return 1; }
	fprintf(stderr, "ok permutation of %d\n", n);
	return 0;
}
