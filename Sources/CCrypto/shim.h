#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pkcs7.h>

// App Store receipts are PKCS#7 signedData around an ASN.1 payload. OpenSSL parses both; the
// PKCS7 structure's union and its type macros are reached here, in C, so Swift never does.

#define CCRYPTO_CONTENT_OK 0
#define CCRYPTO_CONTENT_NOT_SIGNED 1
#define CCRYPTO_CONTENT_NOT_DATA 2
#define CCRYPTO_CONTENT_MISSING 3

/// The bytes a signedData PKCS#7 wraps (valid while `p7` lives), or why there are none.
static inline int ccrypto_pkcs7_signed_content(PKCS7 *p7, const unsigned char **data, long *length) {
    if (p7 == NULL || p7->type == NULL || OBJ_obj2nid(p7->type) != NID_pkcs7_signed || p7->d.sign == NULL) {
        return CCRYPTO_CONTENT_NOT_SIGNED;
    }
    PKCS7 *inner = p7->d.sign->contents;
    if (inner == NULL || inner->type == NULL || OBJ_obj2nid(inner->type) != NID_pkcs7_data) {
        return CCRYPTO_CONTENT_NOT_DATA;
    }
    if (inner->d.data == NULL) return CCRYPTO_CONTENT_MISSING;
    *data = ASN1_STRING_get0_data(inner->d.data);
    *length = ASN1_STRING_length(inner->d.data);
    return CCRYPTO_CONTENT_OK;
}

/// ASN1_get_object's flags: bit 0x80 an error, 0x20 constructed, 0x21 constructed with an
/// indefinite length (BER, which a DER payload never uses).
#define CCRYPTO_ASN1_ERROR 0x80
#define CCRYPTO_ASN1_INDEFINITE 0x21
