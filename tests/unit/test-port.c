/* SPDX-License-Identifier: MIT */
/* Free-port picking against real sockets. */
#include "test.h"

#include "port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Listen on host:port; returns the socket, or -errno. */
static int listen_on(int family, const char *host, int port)
{
        struct sockaddr_storage sa = { 0 };
        socklen_t len;
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        if (family == AF_INET6) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;

                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((uint16_t)port);
                inet_pton(AF_INET6, host, &s6->sin6_addr);
                len = sizeof(*s6);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;

                s4->sin_family = AF_INET;
                s4->sin_port = htons((uint16_t)port);
                inet_pton(AF_INET, host, &s4->sin_addr);
                len = sizeof(*s4);
        }
        if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 4) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

TEST(pick_ipv4)
{
        _cleanup_free_ char *err = NULL;
        int port = 0, fd;

        ASSERT_OK(port_pick_free("127.0.0.1", &port, &err));
        ASSERT_TRUE(port > 0 && port <= 65535);
        /* Free means a server can take it, and nothing answered there before it did. */
        ASSERT_EQ(port_probe_listener("127.0.0.1", port), 0);
        fd = listen_on(AF_INET, "127.0.0.1", port);
        ASSERT_OK(fd);
        ASSERT_EQ(port_probe_listener("127.0.0.1", port), 1);
        close(fd);
        ASSERT_EQ(port_probe_listener("127.0.0.1", port), 0);
}

TEST(pick_ipv6)
{
        int port = 0, fd, r;

        r = port_pick_free("::1", &port, NULL);
        if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT) {
                fprintf(stderr, "pick_ipv6: no IPv6 loopback here, not checked\n");
                return; /* test_skip() would end the other tests of this binary too */
        }
        ASSERT_OK(r);
        fd = listen_on(AF_INET6, "::1", port);
        ASSERT_OK(fd);
        ASSERT_EQ(port_probe_listener("::1", port), 1);
        close(fd);
}

TEST(bad_hosts)
{
        _cleanup_free_ char *err = NULL;
        int port = 4242;

        ASSERT_ERR(port_pick_free("localhost", &port, &err), EINVAL);
        ASSERT_CONTAINS(err, "'localhost' is not a numeric");
        ASSERT_EQ(port, 4242); /* untouched */
        ASSERT_ERR(port_probe_listener("127.0.0.1", 0), EINVAL);
        ASSERT_ERR(port_probe_listener("127.0.0.1", 70000), EINVAL);
        ASSERT_ERR(port_probe_listener("not-an-address", 80), EINVAL);
}
