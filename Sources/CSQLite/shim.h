#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import; bind calls use this instead.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
