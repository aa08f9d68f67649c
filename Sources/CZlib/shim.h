#include <zlib.h>

// inflateInit2 is a macro over inflateInit2_; Swift cannot call macros.
static inline int czlib_inflate_init_gzip(z_streamp stream) {
    // 15 window bits + 32: detect gzip or zlib headers automatically.
    return inflateInit2(stream, 15 + 32);
}
