/* capture.c: head + tail capture of a stream in bounded memory. */
#define _GNU_SOURCE
#include "capture.h"
#include "tap.h"

#include <stdint.h>
#include <stdlib.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static char *random_bytes(size_t n)
{
	char *p = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(rnd() & 0xff);
	return p;
}

/* What a capture of keep bytes must hold after len bytes of data. */
static int check_model(const pd_output *o, uint64_t keep, const char *data, size_t len, char *why, size_t whylen)
{
	size_t hc = (size_t)(keep - keep / 4), rc = (size_t)(keep / 4);
	size_t hl = len < hc ? len : hc;
	size_t ts = len > hc ? (len - rc > hc ? len - rc : hc) : len;
	size_t tl = len - ts;
	if (o->total != len)
		return snprintf(why, whylen, "total %llu, want %zu", (unsigned long long)o->total, len), 0;
	if (o->head_len != hl)
		return snprintf(why, whylen, "head_len %zu, want %zu", o->head_len, hl), 0;
	if (hl && (!o->head || memcmp(o->head, data, hl)))
		return snprintf(why, whylen, "head bytes differ"), 0;
	if (o->tail_len != tl)
		return snprintf(why, whylen, "tail_len %zu, want %zu", o->tail_len, tl), 0;
	if (tl && (!o->tail || memcmp(o->tail, data + ts, tl)))
		return snprintf(why, whylen, "tail bytes differ (want bytes %zu..%zu)", ts, len), 0;
	bool tr = len > hl + tl;
	if (o->truncated != tr)
		return snprintf(why, whylen, "truncated %d, want %d", o->truncated, tr), 0;
	return 1;
}

static void model_ok(const pd_output *o, uint64_t keep, const char *data, size_t len, const char *desc)
{
	char why[160] = "";
	if (!ok(check_model(o, keep, data, len, why, sizeof why), "%s", desc))
		printf("#   %s\n", why);
}

static void free_output(pd_output *o)
{
	free(o->head);
	free(o->tail);
	memset(o, 0, sizeof *o);
}

/* Feeds data in chunks of the given sizes (0 = random sizes up to maxchunk); returns the sum of the
 * live (head) counts, or SIZE_MAX when a live count was wrong. */
static size_t feed(pd_capture *c, const char *data, size_t len, size_t maxchunk, bool allow_empty)
{
	size_t off = 0, live = 0;
	while (off < len) {
		size_t n = maxchunk ? (size_t)(rnd() % (maxchunk + 1)) : len;
		if (!n && !allow_empty)
			n = 1;
		if (n > len - off)
			n = len - off;
		size_t before = c->head_len;
		size_t l = pd_capture_add(c, data + off, n);
		if (l > n || c->head_len != before + l)
			return SIZE_MAX;
		live += l;
		off += n;
	}
	return live;
}

static void test_small(void)
{
	pd_capture c;
	pd_output o;
	ok(pd_capture_init(&c, 100) == 0, "init keep=100");
	size_t l = pd_capture_add(&c, "hello", 5);
	is_int(l, 5, "small chunk goes to the head entirely (live)");
	pd_capture_finish(&c, &o);
	ok(o.head_len == 5 && !memcmp(o.head, "hello", 5) && o.tail_len == 0 && o.total == 5 && !o.truncated,
	   "small output kept whole in the head");
	ok(c.head == NULL && c.ring == NULL && c.total == 0, "finish empties the capture");
	free_output(&o);

	ok(pd_capture_init(&c, 100) == 0, "init keep=100 (nothing written)");
	pd_capture_finish(&c, &o);
	ok(o.head_len == 0 && o.tail_len == 0 && o.total == 0 && !o.truncated, "no output: empty, not truncated");
	free_output(&o);
}

static void test_boundary(void)
{
	char data[102];
	for (int i = 0; i < 102; i++)
		data[i] = (char)('A' + i % 26);
	pd_capture c;
	pd_output o;

	pd_capture_init(&c, 100);
	size_t live = pd_capture_add(&c, data, 100);
	pd_capture_finish(&c, &o);
	is_int(live, 75, "exactly keep bytes: 3/4 go live");
	model_ok(&o, 100, data, 100, "exactly keep bytes in one chunk");
	ok(!o.truncated && o.head_len + o.tail_len == 100, "exactly keep bytes: not truncated, all kept");
	free_output(&o);

	pd_capture_init(&c, 100);
	for (int i = 0; i < 100; i++)
		pd_capture_add(&c, data + i, 1);
	pd_capture_finish(&c, &o);
	model_ok(&o, 100, data, 100, "exactly keep bytes, one at a time");
	free_output(&o);

	pd_capture_init(&c, 100);
	pd_capture_add(&c, data, 101);
	pd_capture_finish(&c, &o);
	ok(o.truncated && o.total == 101, "keep+1 bytes: truncated, total 101");
	ok(o.head_len == 75 && !memcmp(o.head, data, 75), "keep+1: head is the first 75 bytes");
	ok(o.tail_len == 25 && !memcmp(o.tail, data + 76, 25), "keep+1: tail is the last 25 bytes");
	free_output(&o);

	/* keep not a multiple of 4: the head gets the rounding */
	pd_capture_init(&c, 7);
	pd_capture_add(&c, data, 7);
	pd_capture_finish(&c, &o);
	ok(o.head_len == 6 && o.tail_len == 1 && !o.truncated && !memcmp(o.tail, data + 6, 1), "keep=7: 6 + 1");
	free_output(&o);
}

static void test_large(void)
{
	size_t len = 1 << 20;
	char *data = random_bytes(len);
	pd_capture c;
	pd_output o;
	pd_capture_init(&c, 4000);
	size_t live = feed(&c, data, len, 0, false);
	pd_capture_finish(&c, &o);
	is_int(live, 3000, "1 MiB into keep=4000: 3000 bytes go live");
	ok(o.total == len && o.truncated, "1 MiB: total counted, truncated");
	ok(o.head_len == 3000 && !memcmp(o.head, data, 3000), "1 MiB: head = first 3/4 keep");
	ok(o.tail_len == 1000 && !memcmp(o.tail, data + len - 1000, 1000), "1 MiB: tail = last 1/4 keep, in order");
	free_output(&o);

	pd_capture_init(&c, 4000);
	feed(&c, data, len, 777, false);
	pd_capture_finish(&c, &o);
	model_ok(&o, 4000, data, len, "1 MiB in random chunks up to 777");
	free_output(&o);
	free(data);
}

static void test_wrap(void)
{
	/* keep=40: head 30, ring 10. Sizes coprime with 10 make the ring wrap mid-chunk. */
	char data[1000];
	for (int i = 0; i < 1000; i++)
		data[i] = (char)(i % 251);
	static const size_t sizes[] = {1, 3, 7, 9, 10, 11, 13, 23};
	int good = 0;
	char why[128] = "";
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		for (size_t len = 31; len < 1000; len += 97) {
			pd_capture c;
			pd_output o;
			pd_capture_init(&c, 40);
			for (size_t off = 0; off < len; off += sizes[s])
				pd_capture_add(&c, data + off, off + sizes[s] <= len ? sizes[s] : len - off);
			pd_capture_finish(&c, &o);
			if (check_model(&o, 40, data, len, why, sizeof why))
				good++;
			else if (good >= 0) {
				printf("# chunk %zu, len %zu: %s\n", sizes[s], len, why);
				good = -1000;
			}
			free_output(&o);
		}
	}
	ok(good > 0, "ring wraps at every chunk size: tail is the last bytes, oldest first");

	/* a chunk bigger than the ring after a partial fill, then a partial chunk */
	pd_capture c;
	pd_output o;
	pd_capture_init(&c, 40);
	pd_capture_add(&c, data, 34);      /* head full, ring holds 4 */
	pd_capture_add(&c, data + 34, 25); /* bigger than the ring: the last 10 of it */
	pd_capture_add(&c, data + 59, 3);  /* wraps from position 0 */
	pd_capture_finish(&c, &o);
	model_ok(&o, 40, data, 62, "partial ring, overfull chunk, partial chunk");
	free_output(&o);

	/* exactly ring-sized chunks: the ring is replaced whole each time */
	pd_capture_init(&c, 40);
	for (size_t off = 0; off < 130; off += 10)
		pd_capture_add(&c, data + off, 10);
	pd_capture_finish(&c, &o);
	model_ok(&o, 40, data, 130, "ring-sized chunks");
	free_output(&o);
}

static void test_tiny_keep(void)
{
	pd_capture c;
	pd_output o;
	ok(pd_capture_init(&c, 0) == 0, "keep=0 initialises");
	size_t l = pd_capture_add(&c, "abcdef", 6) + pd_capture_add(&c, "gh", 2);
	pd_capture_finish(&c, &o);
	ok(l == 0 && o.head_len == 0 && o.tail_len == 0, "keep=0 keeps nothing and passes nothing live");
	ok(o.total == 8 && o.truncated, "keep=0: counts all, truncated");
	free_output(&o);

	pd_capture_init(&c, 0);
	pd_capture_finish(&c, &o);
	ok(o.total == 0 && !o.truncated, "keep=0, no output: not truncated");
	free_output(&o);

	for (uint64_t k = 1; k <= 3; k++) {
		pd_capture_init(&c, k);
		pd_capture_add(&c, "abcdef", 6);
		pd_capture_finish(&c, &o);
		ok(o.head_len == k && !memcmp(o.head, "abcdef", k) && o.tail_len == 0 && o.truncated && o.total == 6,
		   "keep=%llu: only a head of %llu bytes", (unsigned long long)k, (unsigned long long)k);
		free_output(&o);
	}

	/* zero-length adds change nothing */
	pd_capture_init(&c, 16);
	pd_capture_add(&c, "", 0);
	pd_capture_add(&c, "abc", 3);
	pd_capture_add(&c, "", 0);
	pd_capture_finish(&c, &o);
	ok(o.total == 3 && o.head_len == 3 && !memcmp(o.head, "abc", 3), "zero-length chunks are harmless");
	free_output(&o);

	/* free without finish (valgrind checks nothing leaks) */
	pd_capture_init(&c, 64);
	pd_capture_add(&c, "0123456789012345678901234567890123456789012345678901234567890123456789", 70);
	pd_capture_free(&c);
	ok(c.head == NULL && c.ring == NULL, "free without finish clears the capture");
}

/* Random keeps, lengths and chunkings: always the model, and always the one-chunk result. */
static void test_property(void)
{
	int iters = 400, bad_model = 0, bad_same = 0, bad_live = 0;
	char why[128] = "";
	for (int it = 0; it < iters; it++) {
		uint64_t keep = rnd() % 3 == 0 ? rnd() % 16 : rnd() % 5000;
		size_t len = (size_t)(rnd() % 4 == 0 ? rnd() % (keep + 2) : rnd() % 20000);
		char *data = random_bytes(len);
		pd_capture a, b;
		pd_output oa, ob;
		pd_capture_init(&a, keep);
		pd_capture_init(&b, keep);
		size_t la = pd_capture_add(&a, data, len);
		size_t maxchunk = 1 + (size_t)(rnd() % (rnd() % 2 ? 8 : 3000));
		size_t lb = feed(&b, data, len, maxchunk, true);
		pd_capture_finish(&a, &oa);
		pd_capture_finish(&b, &ob);
		if (!check_model(&ob, keep, data, len, why, sizeof why) && !bad_model++)
			printf("# iter %d keep %llu len %zu maxchunk %zu: %s\n", it, (unsigned long long)keep, len,
			       maxchunk, why);
		bool same = oa.total == ob.total && oa.truncated == ob.truncated && oa.head_len == ob.head_len &&
			    oa.tail_len == ob.tail_len && (!oa.head_len || !memcmp(oa.head, ob.head, oa.head_len)) &&
			    (!oa.tail_len || !memcmp(oa.tail, ob.tail, oa.tail_len));
		if (!same && !bad_same++)
			printf("# iter %d keep %llu len %zu: chunked result differs from one chunk\n", it,
			       (unsigned long long)keep, len);
		if ((la != lb || la != oa.head_len) && !bad_live++)
			printf("# iter %d: live counts %zu (one chunk) vs %zu (chunked), head %zu\n", it, la, lb,
			       oa.head_len);
		free_output(&oa);
		free_output(&ob);
		free(data);
	}
	is_int(bad_model, 0, "%d random chunkings match the head/tail model", iters);
	is_int(bad_same, 0, "%d random chunkings equal the one-chunk result", iters);
	is_int(bad_live, 0, "live bytes returned sum to the head, whatever the chunking");
}

int main(void)
{
	plan(34);
	test_small();
	test_boundary();
	test_large();
	test_wrap();
	test_tiny_keep();
	test_property();
	return done();
}
