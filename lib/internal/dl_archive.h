/* libarchive, loaded on first use (paddock.h: pd_dl_lib): the image store's layers and
 * --strip-history. Include after nothing else of libarchive's. */
#ifndef PADDOCK_DL_ARCHIVE_H
#define PADDOCK_DL_ARCHIVE_H

#include "paddock.h"

#include <archive.h>
#include <archive_entry.h>

#define PD_DLA_FUNCS(X) \
	X(archive_entry_acl_clear) \
	X(archive_entry_filetype) \
	X(archive_entry_free) \
	X(archive_entry_gid) \
	X(archive_entry_hardlink) \
	X(archive_entry_new) \
	X(archive_entry_pathname) \
	X(archive_entry_set_filetype) \
	X(archive_entry_set_gid) \
	X(archive_entry_set_gname) \
	X(archive_entry_set_hardlink) \
	X(archive_entry_set_mtime) \
	X(archive_entry_set_pathname) \
	X(archive_entry_set_perm) \
	X(archive_entry_set_size) \
	X(archive_entry_set_uid) \
	X(archive_entry_set_uname) \
	X(archive_entry_size) \
	X(archive_entry_symlink) \
	X(archive_entry_uid) \
	X(archive_entry_unset_atime) \
	X(archive_entry_unset_birthtime) \
	X(archive_entry_unset_ctime) \
	X(archive_entry_xattr_add_entry) \
	X(archive_entry_xattr_clear) \
	X(archive_entry_xattr_next) \
	X(archive_entry_xattr_reset) \
	X(archive_error_string) \
	X(archive_read_data_block) \
	X(archive_read_disk_descend) \
	X(archive_read_disk_new) \
	X(archive_read_disk_open) \
	X(archive_read_disk_set_behavior) \
	X(archive_read_disk_set_symlink_physical) \
	X(archive_read_free) \
	X(archive_read_new) \
	X(archive_read_next_header) \
	X(archive_read_next_header2) \
	X(archive_read_open) \
	X(archive_read_open_filename) \
	X(archive_read_support_filter_all) \
	X(archive_read_support_format_gnutar) \
	X(archive_read_support_format_tar) \
	X(archive_write_close) \
	X(archive_write_data) \
	X(archive_write_data_block) \
	X(archive_write_disk_new) \
	X(archive_write_disk_set_options) \
	X(archive_write_finish_entry) \
	X(archive_write_free) \
	X(archive_write_header) \
	X(archive_write_new) \
	X(archive_write_open) \
	X(archive_write_set_bytes_in_last_block) \
	X(archive_write_set_format_pax_restricted)

#define PD_DLA_ENUM(name) PD_DLA_##name,
enum { PD_DLA_FUNCS(PD_DLA_ENUM) PD_DLA_NFUNCS };
#undef PD_DLA_ENUM
extern pd_dl_lib pd_dla_lib; /* libarchive.so.13 */

#ifndef PD_DLA_IMPL
#define archive_entry_acl_clear ((__typeof__(archive_entry_acl_clear) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_acl_clear))
#define archive_entry_filetype ((__typeof__(archive_entry_filetype) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_filetype))
#define archive_entry_free ((__typeof__(archive_entry_free) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_free))
#define archive_entry_gid ((__typeof__(archive_entry_gid) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_gid))
#define archive_entry_hardlink ((__typeof__(archive_entry_hardlink) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_hardlink))
#define archive_entry_new ((__typeof__(archive_entry_new) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_new))
#define archive_entry_pathname ((__typeof__(archive_entry_pathname) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_pathname))
#define archive_entry_set_filetype ((__typeof__(archive_entry_set_filetype) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_filetype))
#define archive_entry_set_gid ((__typeof__(archive_entry_set_gid) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_gid))
#define archive_entry_set_gname ((__typeof__(archive_entry_set_gname) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_gname))
#define archive_entry_set_hardlink ((__typeof__(archive_entry_set_hardlink) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_hardlink))
#define archive_entry_set_mtime ((__typeof__(archive_entry_set_mtime) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_mtime))
#define archive_entry_set_pathname ((__typeof__(archive_entry_set_pathname) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_pathname))
#define archive_entry_set_perm ((__typeof__(archive_entry_set_perm) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_perm))
#define archive_entry_set_size ((__typeof__(archive_entry_set_size) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_size))
#define archive_entry_set_uid ((__typeof__(archive_entry_set_uid) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_uid))
#define archive_entry_set_uname ((__typeof__(archive_entry_set_uname) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_set_uname))
#define archive_entry_size ((__typeof__(archive_entry_size) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_size))
#define archive_entry_symlink ((__typeof__(archive_entry_symlink) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_symlink))
#define archive_entry_uid ((__typeof__(archive_entry_uid) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_uid))
#define archive_entry_unset_atime ((__typeof__(archive_entry_unset_atime) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_unset_atime))
#define archive_entry_unset_birthtime ((__typeof__(archive_entry_unset_birthtime) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_unset_birthtime))
#define archive_entry_unset_ctime ((__typeof__(archive_entry_unset_ctime) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_unset_ctime))
#define archive_entry_xattr_add_entry ((__typeof__(archive_entry_xattr_add_entry) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_xattr_add_entry))
#define archive_entry_xattr_clear ((__typeof__(archive_entry_xattr_clear) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_xattr_clear))
#define archive_entry_xattr_next ((__typeof__(archive_entry_xattr_next) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_xattr_next))
#define archive_entry_xattr_reset ((__typeof__(archive_entry_xattr_reset) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_entry_xattr_reset))
#define archive_error_string ((__typeof__(archive_error_string) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_error_string))
#define archive_read_data_block ((__typeof__(archive_read_data_block) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_data_block))
#define archive_read_disk_descend ((__typeof__(archive_read_disk_descend) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_disk_descend))
#define archive_read_disk_new ((__typeof__(archive_read_disk_new) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_disk_new))
#define archive_read_disk_open ((__typeof__(archive_read_disk_open) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_disk_open))
#define archive_read_disk_set_behavior ((__typeof__(archive_read_disk_set_behavior) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_disk_set_behavior))
#define archive_read_disk_set_symlink_physical ((__typeof__(archive_read_disk_set_symlink_physical) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_disk_set_symlink_physical))
#define archive_read_free ((__typeof__(archive_read_free) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_free))
#define archive_read_new ((__typeof__(archive_read_new) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_new))
#define archive_read_next_header ((__typeof__(archive_read_next_header) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_next_header))
#define archive_read_next_header2 ((__typeof__(archive_read_next_header2) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_next_header2))
#define archive_read_open ((__typeof__(archive_read_open) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_open))
#define archive_read_open_filename ((__typeof__(archive_read_open_filename) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_open_filename))
#define archive_read_support_filter_all ((__typeof__(archive_read_support_filter_all) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_support_filter_all))
#define archive_read_support_format_gnutar ((__typeof__(archive_read_support_format_gnutar) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_support_format_gnutar))
#define archive_read_support_format_tar ((__typeof__(archive_read_support_format_tar) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_read_support_format_tar))
#define archive_write_close ((__typeof__(archive_write_close) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_close))
#define archive_write_data ((__typeof__(archive_write_data) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_data))
#define archive_write_data_block ((__typeof__(archive_write_data_block) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_data_block))
#define archive_write_disk_new ((__typeof__(archive_write_disk_new) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_disk_new))
#define archive_write_disk_set_options ((__typeof__(archive_write_disk_set_options) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_disk_set_options))
#define archive_write_finish_entry ((__typeof__(archive_write_finish_entry) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_finish_entry))
#define archive_write_free ((__typeof__(archive_write_free) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_free))
#define archive_write_header ((__typeof__(archive_write_header) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_header))
#define archive_write_new ((__typeof__(archive_write_new) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_new))
#define archive_write_open ((__typeof__(archive_write_open) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_open))
#define archive_write_set_bytes_in_last_block ((__typeof__(archive_write_set_bytes_in_last_block) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_set_bytes_in_last_block))
#define archive_write_set_format_pax_restricted ((__typeof__(archive_write_set_format_pax_restricted) *)pd_dl_fn(&pd_dla_lib, PD_DLA_archive_write_set_format_pax_restricted))
#endif

#endif
