/* libcrypto, loaded on first use (paddock.h: pd_dl_lib): SHA-256 (lib/sha256.c, githist.c). */
#ifndef PADDOCK_DL_CRYPTO_H
#define PADDOCK_DL_CRYPTO_H

#include "paddock.h"

#include <openssl/evp.h>

#define PD_DLC_FUNCS(X) \
	X(EVP_DigestFinal_ex) \
	X(EVP_DigestInit_ex) \
	X(EVP_DigestUpdate) \
	X(EVP_MD_CTX_free) \
	X(EVP_MD_CTX_new) \
	X(EVP_sha256)

#define PD_DLC_ENUM(name) PD_DLC_##name,
enum { PD_DLC_FUNCS(PD_DLC_ENUM) PD_DLC_NFUNCS };
#undef PD_DLC_ENUM
extern pd_dl_lib pd_dlc_lib; /* libcrypto.so.3 */

#ifndef PD_DLC_IMPL
#define EVP_DigestFinal_ex ((__typeof__(EVP_DigestFinal_ex) *)pd_dl_fn(&pd_dlc_lib, PD_DLC_EVP_DigestFinal_ex))
#define EVP_DigestInit_ex ((__typeof__(EVP_DigestInit_ex) *)pd_dl_fn(&pd_dlc_lib, PD_DLC_EVP_DigestInit_ex))
#define EVP_DigestUpdate ((__typeof__(EVP_DigestUpdate) *)pd_dl_fn(&pd_dlc_lib, PD_DLC_EVP_DigestUpdate))
#define EVP_MD_CTX_free ((__typeof__(EVP_MD_CTX_free) *)pd_dl_fn(&pd_dlc_lib, PD_DLC_EVP_MD_CTX_free))
#define EVP_MD_CTX_new ((__typeof__(EVP_MD_CTX_new) *)pd_dl_fn(&pd_dlc_lib, PD_DLC_EVP_MD_CTX_new))
#define EVP_sha256 ((__typeof__(EVP_sha256) *)pd_dl_fn(&pd_dlc_lib, PD_DLC_EVP_sha256))
#endif

#endif
