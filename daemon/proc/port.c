/* SPDX-License-Identifier: MIT */
/* Picking a free TCP port for a run's server (see port.h). */
#include "port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>


/* host:port as a socket address; numeric only, so no name service is ever consulted from the loop. */
static int port_resolve(const char *host, int port, struct sockaddr_storage *ret, socklen_t *ret_len)
{
        struct addrinfo hints = {
                .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                .ai_socktype = SOCK_STREAM,
        };
        struct addrinfo *ai = NULL;
        char service[16];
        int r;

        if (!host || port < 0 || port > 65535)
                return -EINVAL;
        snprintf(service, sizeof(service), "%d", port);
        r = getaddrinfo(host, service, &hints, &ai);
        if (r != 0)
                return r == EAI_SYSTEM ? -errno : -EINVAL;
        memcpy(ret, ai->ai_addr, ai->ai_addrlen);
        *ret_len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

static int sockaddr_port(const struct sockaddr_storage *sa)
{
        if (sa->ss_family == AF_INET6)
                return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
        return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

int port_probe_listener(const char *host, int port)
{
        struct sockaddr_storage sa;
        struct pollfd p;
        socklen_t len, elen = sizeof(int);
        _cleanup_close_ int fd = -1;
        int r, err = 0;

        if (port <= 0)
                return -EINVAL;
        r = port_resolve(host, port, &sa, &len);
        if (r < 0)
                return r;
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, len) == 0)
                return 1;
        if (errno == ECONNREFUSED)
                return 0;
        if (errno != EINPROGRESS)
                return -errno;
        p = (struct pollfd){ .fd = fd, .events = POLLOUT };
        r = poll(&p, 1, PORT_PROBE_TIMEOUT_MS);
        if (r < 0)
                return -errno;
        if (r == 0)
                return 0; /* nothing answered in time: nobody serves there */
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
                return -errno;
        if (err == 0)
                return 1;
        return err == ECONNREFUSED || err == ETIMEDOUT ? 0 : -err;
}

/* Let the kernel choose a port host can bind (no SO_REUSEADDR/SO_REUSEPORT, so no sharing). */
static int port_bind_any(const char *host, int *ret_port)
{
        struct sockaddr_storage sa, got;
        socklen_t len, glen = sizeof(got);
        _cleanup_close_ int fd = -1;
        int r;

        r = port_resolve(host, 0, &sa, &len);
        if (r < 0)
                return r;
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *)&sa, len) < 0)
                return -errno;
        if (getsockname(fd, (struct sockaddr *)&got, &glen) < 0)
                return -errno;
        *ret_port = sockaddr_port(&got);
        return 0;
}

int port_pick_free(const char *host, int *ret_port, char **reterr)
{
        int r, port = 0;

        for (int i = 0; i < PORT_PICK_TRIES; i++) {
                r = port_bind_any(host, &port);
                if (r == -EINVAL)
                        return mx_reterr(reterr, r, "'%s' is not a numeric IPv4 or IPv6 address", strna(host));
                if (r < 0)
                        return mx_reterr(reterr, r, "binding a TCP port on %s: %s", host, strerror(-r));
                /*
                 * bind() only sees sockets on this host: a port forwarded elsewhere
                 * (docker publishes ports through iptables DNAT, with no host socket
                 * when its userland proxy is off) binds fine and still answers.
                 */
                r = port_probe_listener(host, port);
                if (r < 0)
                        return mx_reterr(reterr, r, "probing %s port %d: %s", host, port, strerror(-r));
                if (r == 0) {
                        *ret_port = port;
                        return 0;
                }
        }
        return mx_reterr(reterr, -EADDRINUSE, "no free TCP port on %s after %d tries", host, PORT_PICK_TRIES);
}
