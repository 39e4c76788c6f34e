/* auditinterp.c: the interpreter the kernel opens by itself for a file it executes, read from the
 * file as the kernel reads it (fs/binfmt_script.c, fs/binfmt_elf.c). The bytes are the sandboxed
 * program's own, written to be read here: every offset and count in them is hostile, so each read
 * is a pread bounded by this side's buffers, never a pointer into the file, and a malformed file
 * is at worst "no interpreter" (the kernel refuses to run it too) or a longer reading than the
 * kernel's (judged more strictly, never less). fuzz/fuzz_interp.c runs it on arbitrary files. */
#define _GNU_SOURCE
#include "audit.h"

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pd_audit_interp_fd(int fd, char *out, size_t size)
{
	if (size < 2)
		return 0;
	struct stat st;
	unsigned char buf[256];
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, buf, sizeof buf, 0) : -1;
	int found = 0;
	if (n >= 2 && buf[0] == '#' && buf[1] == '!') {
		size_t i = 2, j;
		while (i < (size_t)n && (buf[i] == ' ' || buf[i] == '\t'))
			i++;
		for (j = i; j < (size_t)n && buf[j] && buf[j] != ' ' && buf[j] != '\t' && buf[j] != '\n'; j++)
			;
		if (j > i && j - i < size) {
			memcpy(out, buf + i, j - i);
			out[j - i] = 0;
			found = 1;
		}
	} else if (n >= (ssize_t)sizeof(Elf32_Ehdr) && !memcmp(buf, ELFMAG, SELFMAG) &&
		   (buf[EI_CLASS] == ELFCLASS64 || buf[EI_CLASS] == ELFCLASS32)) {
		/* the program headers as the kernel takes them (load_elf_phdrs): entries of the
		 * class's size, up to 64 KiB of them; its first PT_INTERP is the one it opens */
		bool e64 = buf[EI_CLASS] == ELFCLASS64;
		uint64_t phoff;
		unsigned phnum, entsize, want = e64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
		/* copied out: buf has no alignment of its own for the headers' fields */
		if (e64 && n >= (ssize_t)sizeof(Elf64_Ehdr)) {
			Elf64_Ehdr eh;
			memcpy(&eh, buf, sizeof eh);
			phoff = eh.e_phoff, phnum = eh.e_phnum, entsize = eh.e_phentsize;
		} else if (!e64) {
			Elf32_Ehdr eh;
			memcpy(&eh, buf, sizeof eh);
			phoff = eh.e_phoff, phnum = eh.e_phnum, entsize = eh.e_phentsize;
		} else {
			phoff = 0, phnum = 0, entsize = 0;
		}
		if (entsize != want || (uint64_t)phnum * want > 65536)
			phnum = 0;
		Elf64_Phdr ph[32]; /* read 32 entries at a time (as bytes: an ELF32 one is smaller) */
		for (unsigned k = 0; k < phnum && !found;) {
			unsigned batch = phnum - k < 32 ? phnum - k : 32;
			ssize_t got = pread(fd, ph, (size_t)batch * want, (off_t)(phoff + (uint64_t)k * want));
			if (got < (ssize_t)want)
				break;
			batch = (unsigned)((size_t)got / want);
			for (unsigned b = 0; b < batch; b++, k++) {
				uint32_t type;
				uint64_t off, filesz;
				if (e64) {
					type = ph[b].p_type, off = ph[b].p_offset, filesz = ph[b].p_filesz;
				} else {
					Elf32_Phdr p32;
					memcpy(&p32, (const char *)ph + (size_t)b * want, sizeof p32);
					type = p32.p_type, off = p32.p_offset, filesz = p32.p_filesz;
				}
				if (type != PT_INTERP)
					continue;
				size_t len = filesz < size ? (size_t)filesz : size - 1;
				ssize_t r = len ? pread(fd, out, len, (off_t)off) : -1;
				if (r > 0) {
					out[r] = 0;
					found = out[0] != 0;
				}
				k = phnum; /* the first one only, found or not */
				break;
			}
		}
	}
	return found;
}
