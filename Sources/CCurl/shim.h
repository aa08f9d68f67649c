#include <curl/curl.h>

// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot
// call. These typed setters, split by argument kind, are the whole bridge to curl.

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_write_callback(
    CURL *handle, size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
static inline CURLcode ccurl_easy_setopt_header_callback(
    CURL *handle, size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}
static inline CURLcode ccurl_easy_setopt_prereq_callback(CURL *handle, curl_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}
static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLMcode ccurl_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLMcode ccurl_multi_setopt_socket_callback(CURLM *handle, curl_socket_callback callback) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, callback);
}
static inline CURLMcode ccurl_multi_setopt_timer_callback(CURLM *handle, curl_multi_timer_callback callback) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, callback);
}

// The multi driver waits on an epoll set. These helpers translate between curl's and epoll's
// vocabularies in C, so Swift never touches `struct epoll_event` (packed on x86_64).

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/// A close-on-exec epoll set, or -1 with errno set.
static inline int ccurl_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

/// A non-blocking, close-on-exec eventfd starting at zero, or -1 with errno set.
static inline int ccurl_eventfd_create(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/// Watches `fd` for what curl's socket callback asked (`CURL_POLL_IN`, `_OUT` or `_INOUT`).
/// `known` says whether `fd` should already be in the set; a stale guess (curl closed a socket and
/// the number was reused) is corrected rather than reported. Returns 0, or -1 with errno set.
static inline int ccurl_epoll_watch(int epfd, int fd, int what, int known) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    event.data.fd = fd;
    if (epoll_ctl(epfd, known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event) == 0) return 0;
    if (known && errno == ENOENT) return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
    if (!known && errno == EEXIST) return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event);
    return -1;
}

/// Stops watching `fd`; a socket curl already closed has left the set by itself, so errors are moot.
static inline void ccurl_epoll_unwatch(int epfd, int fd) {
    (void)epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

enum { ccurl_epoll_batch = 256 };

/// Waits up to `timeout_ms` (-1: forever) and writes each ready descriptor to `fds` with its state
/// as curl's `CURL_CSELECT_IN/OUT/ERR` bits in `flags`. Both arrays hold at least `capacity`
/// entries. Returns how many are ready (0 on timeout or EINTR), or -1 with errno set.
static inline int ccurl_epoll_wait(int epfd, int *fds, int *flags, int capacity, int timeout_ms) {
    struct epoll_event ready[ccurl_epoll_batch];
    if (capacity > ccurl_epoll_batch) capacity = ccurl_epoll_batch;
    int count = epoll_wait(epfd, ready, capacity, timeout_ms);
    if (count < 0) return errno == EINTR ? 0 : -1;
    for (int index = 0; index < count; index++) {
        uint32_t events = ready[index].events;
        fds[index] = ready[index].data.fd;
        flags[index] = ((events & EPOLLIN) ? CURL_CSELECT_IN : 0) | ((events & EPOLLOUT) ? CURL_CSELECT_OUT : 0)
            | ((events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
    }
    return count;
}

/// Makes the eventfd readable, waking whoever waits on it.
static inline void ccurl_eventfd_signal(int fd) {
    (void)eventfd_write(fd, 1);
}

/// Waits up to `nanoseconds` for `fd` to become readable: 1 if it is, 0 if the time ran out or a
/// signal came, -1 with errno set.
static inline int ccurl_wait_readable(int fd, long long nanoseconds) {
    struct pollfd watched = {.fd = fd, .events = POLLIN, .revents = 0};
    struct timespec limit = {.tv_sec = nanoseconds / 1000000000LL, .tv_nsec = nanoseconds % 1000000000LL};
    int count = ppoll(&watched, 1, &limit, NULL);
    if (count < 0) return errno == EINTR ? 0 : -1;
    return count;
}

/// Empties the eventfd so it stops reporting readable.
static inline void ccurl_eventfd_drain(int fd) {
    eventfd_t value;
    (void)eventfd_read(fd, &value);
}

// curl reports a socket(2) that fails — no descriptor left (EMFILE) — as "Couldn't connect to
// server", with CURLINFO_OS_ERRNO 0, exactly like a server that refuses. Opening the socket here,
// as curl would (close-on-exec), keeps the errno where the transfer can read it.
#include <sys/socket.h>

static inline curl_socket_t ccurl_open_socket(void *error, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    int fd = socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
    if (fd < 0) {
        *(int *)error = errno;
        return CURL_SOCKET_BAD;
    }
    return fd;
}

/// Makes the connections `handle` opens close their sockets through `callback` with `data`.
static inline CURLcode ccurl_easy_close_sockets_with(CURL *handle, void *data, curl_closesocket_callback callback) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, data);
}

/// Makes `handle` open its sockets with `ccurl_open_socket`, which writes a failure's errno to `error`.
static inline CURLcode ccurl_easy_open_sockets_recording_errors(CURL *handle, int *error) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, ccurl_open_socket);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, error);
}

// Not curl itself, but the process that hands curl the key: prctl is variadic, which Swift cannot
// call. Marks the process not dumpable: no core file, and other processes of the same user can
// neither ptrace it nor read its /proc/<pid>/environ or memory. Returns 0, or -1 with errno set.
#include <sys/prctl.h>

static inline int ccurl_forbid_dumps(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/// 1 while the process is dumpable, 0 once `ccurl_forbid_dumps` ran.
static inline int ccurl_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}
