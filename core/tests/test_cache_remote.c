/* The remote cache's parts that need no Redis (cache_remote.h): [cache] remote URLs parsed or
 * refused with the form expected, passwords redacted, and the back-off kept per remote — one
 * server down does not stop a process from asking another. The fetch and publish paths against
 * a real redis-server are tools/tests/remote_cache.sh. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_remote.h"

static coil_remote_url u;
static char why[512];

Test(remote_url, redis_forms)
{
  cr_assert_eq(coil_remote_parse_url("redis://127.0.0.1", &u, why, sizeof why), 0, "%s", why);
  cr_assert_str_eq(u.host, "127.0.0.1");
  cr_assert_eq(u.port, 6379);
  cr_assert_eq(u.db, 0);
  cr_assert(!u.unix_socket && !u.password[0] && !u.user[0]);

  cr_assert_eq(coil_remote_parse_url("redis://cache-1.lan:7000/3", &u, why, sizeof why), 0, "%s", why);
  cr_assert_str_eq(u.host, "cache-1.lan");
  cr_assert_eq(u.port, 7000);
  cr_assert_eq(u.db, 3);

  cr_assert_eq(coil_remote_parse_url("redis://:s3cr@t@10.0.0.2:6380/", &u, why, sizeof why), 0, "%s", why);
  cr_assert_str_eq(u.password, "s3cr@t"); /* the last @ ends the password */
  cr_assert_str_eq(u.user, "");
  cr_assert_str_eq(u.host, "10.0.0.2");
  cr_assert_eq(u.port, 6380);

  cr_assert_eq(coil_remote_parse_url("redis://ci:pw@h", &u, why, sizeof why), 0, "%s", why);
  cr_assert_str_eq(u.user, "ci");
  cr_assert_str_eq(u.password, "pw");

  cr_assert_eq(coil_remote_parse_url("unix:///run/redis.sock?db=2", &u, why, sizeof why), 0, "%s", why);
  cr_assert(u.unix_socket);
  cr_assert_str_eq(u.path, "/run/redis.sock");
  cr_assert_eq(u.db, 2);
}

/* Each bad URL is refused with a message naming it and what part is wrong. */
Test(remote_url, refused_with_the_reason)
{
  static const struct {
    const char *url, *says;
  } bad[] = {
      {"http://127.0.0.1", "expected redis://"},
      {"redis://", "no host"},
      {"redis://:6379", "no host"},
      {"redis://h:0", "port must be a number from 1 to 65535"},
      {"redis://h:65536", "port must be a number from 1 to 65535"},
      {"redis://h:12x", "port must be a number"},
      {"redis://h/db1", "only /DB"},
      {"redis://h;rm -rf ~", "is not a name or an IPv4 address"},
      {"redis://@h", "password is empty"},
      {"redis://user:@h", "password is empty"},
      {"unix://relative.sock", "absolute path"},
      {"unix://", "absolute path"},
      {"unix:///s.sock?database=1", "only ?db=N"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = 0;
    cr_assert_eq(coil_remote_parse_url(bad[i].url, &u, why, sizeof why), -1, "accepted '%s'", bad[i].url);
    cr_assert(strstr(why, bad[i].says), "'%s': '%s' does not say '%s'", bad[i].url, why, bad[i].says);
    cr_assert(strstr(why, bad[i].url), "'%s': the message does not name the URL: %s", bad[i].url, why);
  }
}

Test(remote_url, redacted)
{
  char out[256];
  coil_remote_redact("redis://ci:hunter2@10.0.0.2:6379/1", out, sizeof out);
  cr_assert_str_eq(out, "redis://ci:****@10.0.0.2:6379/1");
  coil_remote_redact("redis://:p@ss@h", out, sizeof out);
  cr_assert_str_eq(out, "redis://:****@h");
  coil_remote_redact("redis://h:1/2", out, sizeof out);
  cr_assert_str_eq(out, "redis://h:1/2");
  coil_remote_redact("unix:///run/r.sock", out, sizeof out);
  cr_assert_str_eq(out, "unix:///run/r.sock");
}

/* A loopback port nothing listens on: bound, read back and closed (connects are refused). */
static int
refused_port(void)
{
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  cr_assert(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &n) == 0);
  close(s);
  return ntohs(a.sin_port);
}

static int count_notes(const char *path)
{
  FILE *f = fopen(path, "r");
  cr_assert(f);
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strncmp(line, "coil: note: remote cache ", 25) == 0;
  fclose(f);
  return n;
}

/* Two remotes, both down: the first one's outage puts only the first into back-off. */
Test(remote_backoff, per_remote)
{
  char dir[] = "/tmp/coil-remote-XXXXXX";
  cr_assert(mkdtemp(dir));
  char keyfile[128], err[128];
  snprintf(keyfile, sizeof keyfile, "%s/team.key", dir);
  snprintf(err, sizeof err, "%s/stderr", dir);
  int fd = open(keyfile, O_WRONLY | O_CREAT | O_EXCL, 0600);
  cr_assert(fd >= 0);
  const char hex[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
  cr_assert_eq(write(fd, hex, sizeof hex - 1), (ssize_t)(sizeof hex - 1));
  close(fd);
  int root = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert(root >= 0);

  char url_a[64], url_b[64];
  snprintf(url_a, sizeof url_a, "redis://127.0.0.1:%d", refused_port());
  snprintf(url_b, sizeof url_b, "redis://127.0.0.1:%d", refused_port());
  coil_cache_remote a = {.url = url_a, .key_file = keyfile, .timeout_ms = 500, .max_entry = 1 << 20,
                         .prefix = "coil", .publish = true};
  coil_cache_remote b = a;
  b.url = url_b;
  unsigned char mac_key[32] = {1};
  coil_cache_counts ca = {0}, cb = {0};
  const char *key = "0123456789abcdef0123456789abcdef";

  coil_remote_reset();
  fflush(stderr);
  cr_assert(freopen(err, "w", stderr));
  cr_assert_eq(coil_remote_fetch(&a, root, dir, key, "interp", "1.0.0", mac_key, &ca), COIL_REMOTE_ABSENT);
  cr_assert_eq(coil_remote_fetch(&a, root, dir, key, "interp", "1.0.0", mac_key, &ca), COIL_REMOTE_ABSENT);
  cr_assert_eq(coil_remote_fetch(&b, root, dir, key, "interp", "1.0.0", mac_key, &cb), COIL_REMOTE_ABSENT);
  cr_assert_eq(coil_remote_fetch(&b, root, dir, key, "interp", "1.0.0", mac_key, &cb), COIL_REMOTE_ABSENT);
  fflush(stderr);
  cr_assert_eq(ca.remote_errors, 1, "a: asked once");
  cr_assert_eq(ca.remote_skipped, 1, "a: then skipped in its back-off");
  cr_assert_eq(cb.remote_errors, 1, "b: asked although a is down");
  cr_assert_eq(cb.remote_skipped, 1, "b: then skipped in its own back-off");
  cr_assert_eq(count_notes(err), 2, "one note a remote");

  coil_remote_reset(); /* forgets both: each is asked again */
  coil_cache_counts again = {0};
  coil_remote_fetch(&a, root, dir, key, "interp", "1.0.0", mac_key, &again);
  cr_assert_eq(again.remote_errors, 1);
  cr_assert_eq(again.remote_skipped, 0);

  close(root);
  unlink(keyfile);
  unlink(err);
  cr_assert_eq(rmdir(dir), 0, "the fetches left nothing in the cache directory");
}
