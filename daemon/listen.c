/* SPDX-License-Identifier: MIT */
/* The control socket's listening end: the one systemd passed (socket activation), else bound here. */
#include "listen.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

/* Pick the passed descriptor: the one named "control", or the only one there is. */
static int listen_activated(int n, char **names, struct listen_socket *ret, char **reterr)
{
        int fd = -1, flags;

        for (int i = 0; i < n; i++)
                if (names && names[i] && streq(names[i], "control"))
                        fd = SD_LISTEN_FDS_START + i;
        if (fd < 0) {
                if (n > 1) {
                        *reterr = xasprintf("%d sockets were passed and none is named 'control'", n);
                        return -E2BIG;
                }
                fd = SD_LISTEN_FDS_START;
        }
        if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
                *reterr = xasprintf("the passed descriptor %d is not a listening Unix stream socket", fd);
                return -ENOTSOCK;
        }
        /*
         * The passed socket may be blocking (systemd-socket-activate's is); libevent's
         * listener accepts until EAGAIN, so a blocking one would hang the loop in accept().
         */
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
                int r = -errno;
                *reterr = xasprintf("cannot make the passed descriptor %d non-blocking: %s", fd,
                                    strerror(-r));
                return r;
        }
        *ret = (struct listen_socket){ .fd = fd, .activated = true };
        return 0;
}

/* Is another daemon answering on this path? */
static bool someone_listens(const struct sockaddr_un *sa)
{
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        return fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
}

static int listen_bind(const char *path, mode_t mode, gid_t gid, struct listen_socket *ret, char **reterr)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        mode_t old;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                *reterr = xasprintf("socket path '%s' is longer than %zu bytes", path, sizeof(sa.sun_path) - 1);
                return -ENAMETOOLONG;
        }
        strcpy(sa.sun_path, path);
        if (someone_listens(&sa)) {
                *reterr = xasprintf("another daemon is already listening on %s", path);
                return -EADDRINUSE;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void)unlink(path); /* a stale node from a daemon that died */
        /* Bind under a tight umask so the node is never briefly wider than mode. */
        old = umask(0177);
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0) {
                r = -errno;
                *reterr = xasprintf("cannot bind %s: %s", path, strerror(-r));
                return r;
        }
        if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0) || chmod(path, mode) < 0) {
                r = -errno;
                *reterr = xasprintf("cannot set owner or mode of %s: %s", path, strerror(-r));
                (void)unlink(path);
                return r;
        }
        if (listen(fd, SOMAXCONN) < 0) {
                r = -errno;
                (void)unlink(path);
                return r;
        }
        *ret = (struct listen_socket){ .fd = TAKE_FD(fd), .path = xstrdup(path) };
        return 0;
}

int listen_open(const char *path, mode_t mode, gid_t gid, struct listen_socket *ret, char **reterr)
{
        _cleanup_strv_free_ char **names = NULL;
        int n = sd_listen_fds_with_names(1, &names);

        if (n < 0) {
                *reterr = xasprintf("cannot read the sockets systemd passed: %s", strerror(-n));
                return n;
        }
        if (n > 0)
                return listen_activated(n, names, ret, reterr);
        return listen_bind(path, mode, gid, ret, reterr);
}

void listen_close(struct listen_socket *s)
{
        if (s->fd >= 0)
                close(s->fd);
        if (s->path && !s->activated)
                (void)unlink(s->path);
        free(s->path);
        *s = (struct listen_socket){ .fd = -1 };
}
