/*
 * spawn_floor.c: the machine's floor for starting no-op commands the way
 * tide-launcher --no-shepherd does (posix_spawn of /bin/sh -c true in a
 * new process group, reaped as they end), with no database at all.
 *
 *   cc -O2 -o /tmp/spawn_floor bench/spawn_floor.c && /tmp/spawn_floor 4000
 *
 * Run two at once to see what two launchers on two cores could reach.
 * Results: docs/benchmarks.md ("Launchers: latency and throughput").
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int
main(int argc, char **argv)
{
	int			n = argc > 1 ? atoi(argv[1]) : 4000;
	char	   *av[] = {"sh", "-c", "true", NULL};
	struct timespec a,
				b;
	int			running = 0;
	double		s;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
	{
		pid_t		p;
		posix_spawnattr_t at;

		posix_spawnattr_init(&at);
		posix_spawnattr_setpgroup(&at, 0);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
		if (posix_spawn(&p, "/bin/sh", NULL, &at, av, environ) != 0)
		{
			perror("posix_spawn");
			return 1;
		}
		posix_spawnattr_destroy(&at);
		running++;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			running--;
	}
	while (running > 0 && wait(NULL) > 0)
		running--;
	clock_gettime(CLOCK_MONOTONIC, &b);
	s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("%d spawns in %.2f s: %.0f/s\n", n, s, n / s);
	return 0;
}
