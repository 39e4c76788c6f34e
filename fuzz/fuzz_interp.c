/* Fuzzes pd_audit_interp_fd (lib/auditinterp.c): the audit reads the interpreter of every file a
 * sandboxed program executes from the file itself — a "#!" line or an ELF's PT_INTERP, 32 or 64
 * bit, its program headers wherever e_phoff says, up to 64 KiB of them. The file is the
 * program's, written to be read there: offsets past the end, e_phnum huge, entries overlapping the
 * header, a PT_INTERP unterminated or pointing outside the file. The input is the file (in a
 * memfd), read with the audit's buffer (4096 bytes) and with a small one (8).
 *
 * Properties beyond "no crash, no over-read, no undefined behaviour":
 *  - the answer is 0 or 1; with 1, out is a non-empty NUL-terminated string shorter than its
 *    buffer;
 *  - it equals a reference written here from the kernel's rules on the input's bytes (not with
 *    pread): for "#!", the first word after spaces and tabs within the first 256 bytes (ending at
 *    a space, tab, newline or NUL; none when it does not fit); for an ELF (class 32 or 64, header
 *    whole in the first 256 bytes, e_phentsize the class's, e_phnum entries of at most 64 KiB),
 *    the first PT_INTERP among the entries wholly inside the file: its bytes from p_offset, at
 *    most p_filesz of them and the buffer's size less one, cut at the file's end, as a C string. */
#include "fuzz_common.h"

#include "audit.h"

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

static int ref_interp(const uint8_t *d, size_t n, char *out, size_t size)
{
	size_t head = n < 256 ? n : 256;
	if (head >= 2 && d[0] == '#' && d[1] == '!') {
		size_t i = 2, j;
		while (i < head && (d[i] == ' ' || d[i] == '\t'))
			i++;
		for (j = i; j < head && d[j] && d[j] != ' ' && d[j] != '\t' && d[j] != '\n'; j++)
			;
		if (j == i || j - i >= size)
			return 0;
		memcpy(out, d + i, j - i);
		out[j - i] = 0;
		return 1;
	}
	if (head < sizeof(Elf32_Ehdr) || memcmp(d, ELFMAG, SELFMAG))
		return 0;
	bool e64 = d[EI_CLASS] == ELFCLASS64;
	if (!e64 && d[EI_CLASS] != ELFCLASS32)
		return 0;
	if (e64 && head < sizeof(Elf64_Ehdr))
		return 0;
	uint64_t phoff, want = e64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	unsigned phnum, ent;
	if (e64) {
		Elf64_Ehdr eh;
		memcpy(&eh, d, sizeof eh);
		phoff = eh.e_phoff, phnum = eh.e_phnum, ent = eh.e_phentsize;
	} else {
		Elf32_Ehdr eh;
		memcpy(&eh, d, sizeof eh);
		phoff = eh.e_phoff, phnum = eh.e_phnum, ent = eh.e_phentsize;
	}
	if (ent != want || phnum * want > 65536 || phoff > n)
		return 0;
	for (uint64_t k = 0; k < phnum && phoff + (k + 1) * want <= n; k++) {
		const uint8_t *p = d + phoff + k * want;
		uint32_t type;
		uint64_t off, filesz;
		if (e64) {
			Elf64_Phdr ph;
			memcpy(&ph, p, sizeof ph);
			type = ph.p_type, off = ph.p_offset, filesz = ph.p_filesz;
		} else {
			Elf32_Phdr ph;
			memcpy(&ph, p, sizeof ph);
			type = ph.p_type, off = ph.p_offset, filesz = ph.p_filesz;
		}
		if (type != PT_INTERP)
			continue;
		uint64_t len = filesz < size ? filesz : size - 1;
		if (!len || off >= n)
			return 0;
		if (len > n - off)
			len = n - off;
		memcpy(out, d + off, len);
		out[len] = 0;
		return out[0] != 0;
	}
	return 0;
}

static int mfd = -1;

static void check(size_t size, const uint8_t *data, size_t n)
{
	/* the buffer exactly size bytes, on the heap: ASan sees a write past it */
	char *out = malloc(size), *ref = malloc(size);
	memset(out, 'Z', size);
	int got = pd_audit_interp_fd(mfd, out, size);
	FUZZ_CHECK(got == 0 || got == 1, "answer %d", got);
	if (got)
		FUZZ_CHECK(memchr(out, 0, size) && out[0], "out not a non-empty string in %zu bytes", size);
	int want = ref_interp(data, n, ref, size);
	FUZZ_CHECK(got == want, "size %zu: found %d, the reference %d", size, got, want);
	if (got)
		FUZZ_CHECK(!strcmp(out, ref), "size %zu: \"%s\", the reference \"%s\"", size, out, ref);
	free(out);
	free(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (mfd < 0 && (mfd = memfd_create("fuzz-interp", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(mfd, 0) < 0 || (size && pwrite(mfd, data, size, 0) != (ssize_t)size))
		abort();
	check(4096, data, size);
	check(8, data, size);
	return 0;
}
