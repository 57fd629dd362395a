/*
 * test_launcher_command.c: the launcher's own reasons for not running a
 * command (command.c): command_check looks up the program a command names
 * first, as sh would, and says why it cannot run; spawn_command says which
 * step of a start failed, and spawn_failure_reason how the job hears of it.
 * Real files and processes in a scratch directory; no database.
 */
#include "tap.h"

#include "command.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

/* command_check's exit code, and its reason in why ("" when it starts). */
static int
check(const char *command, char *why)
{
	why[0] = '\0';
	return command_check(command, why, TL_REASON_MAX);
}

static void
test_check(void)
{
	char		why[TL_REASON_MAX];
	char		cmd[PATH_MAX + 64];
	char		file[PATH_MAX];
	FILE	   *f;

	is_int(check("sleep 0", why), 0, "a program in PATH starts");
	is_int(check("  true && exit 127", why), 0, "a builtin is left to sh");
	is_int(check("exit 127", why), 0, "a command that exits 127 by itself starts (sh decides)");
	is_int(check("FOO=1 no-such-program-e2e", why), 0, "an assignment first: left to sh");
	is_int(check("'no-such-program-e2e'", why), 0, "a quoted word: left to sh");
	is_int(check("$CMD arg", why), 0, "an expansion: left to sh");
	is_int(check("if true; then :; fi", why), 0, "a keyword: left to sh");

	is_int(check("no-such-program-e2e --flag", why), 127, "a program not in PATH: 127");
	is_str(why, "command \"no-such-program-e2e\" not found", "... and the reason names it");
	is_int(check("no-such-program-e2e;echo hi", why), 127, "the first word ends at ;");
	is_int(check("/no/such/dir/prog", why), 127, "a path that does not exist: 127");
	is_str(why, "command \"/no/such/dir/prog\" not found", "... named");

	snprintf(cmd, sizeof(cmd), "%s arg", dir);
	is_int(check(cmd, why), 126, "a directory: 126");
	snprintf(file, sizeof(file), "command \"%s\" is a directory", dir);
	is_str(why, file, "... named");

	snprintf(file, sizeof(file), "%s/plain.sh", dir);
	f = fopen(file, "w");
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	chmod(file, 0644);
	is_int(check(file, why), 126, "a file without execute permission: 126");
	ok(strstr(why, "is not executable") != NULL, "... says so: %s", why);
	chmod(file, 0755);
	is_int(check(file, why), 0, "made executable: it starts");

	/* PATH decides for a plain name */
	setenv("PATH", dir, 1);
	chmod(file, 0644);
	is_int(check("plain.sh", why), 126, "in PATH without execute permission: 126");
	ok(strstr(why, "found in PATH without execute permission") != NULL, "... says so");
	chmod(file, 0755);
	is_int(check("plain.sh", why), 0, "found in PATH");
	is_int(check("sleep 0", why), 127, "a PATH without it: not found, though /bin had it a moment ago");
	setenv("PATH", "/usr/bin:/bin", 1);
}

static void
test_spawn(void)
{
	SpawnSpec	spec = {.id = 1, .job_id = 2, .replica = 0, .command = "echo out; echo err >&2",
	.cuda_visible_devices = ""};
	SpawnFailure failure;
	pid_t		pid = 0;
	int			rc,
				status;
	char		why[TL_REASON_MAX];
	char		want[PATH_MAX + 128];
	char		missing[PATH_MAX];
	char		log[PATH_MAX];
	char		buf[64] = "";
	FILE	   *f;

	opt.node = "n1";
	snprintf(missing, sizeof(missing), "%s/no-such-dir", dir);
	opt.output_dir = missing;
	rc = spawn_command(&spec, &pid, true, &failure);
	is_int(rc, ENOENT, "an output directory that is gone: the start fails with ENOENT");
	is_int(failure, SPAWN_FAILED_OUTPUT, "... at its output file");
	spawn_failure_reason(failure, rc, spec.id, spec.job_id, spec.replica, why, sizeof(why));
	snprintf(want, sizeof(want), "cannot open output file %s/job-2-0-1.log: No such file or directory", missing);
	is_str(why, want, "... and the reason names the file and the error");

	spawn_failure_reason(SPAWN_FAILED_SHELL, EACCES, 1, 2, 0, why, sizeof(why));
	is_str(why, "cannot start /bin/sh: Permission denied", "a shell that cannot start: named");

	opt.output_dir = dir;
	rc = spawn_command(&spec, &pid, true, &failure);
	is_int(rc, 0, "a writable output directory: started");
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "... and it exited 0");
	snprintf(log, sizeof(log), "%s/job-2-0-1.log", dir);
	f = fopen(log, "r");
	if (f)
	{
		size_t		n = fread(buf, 1, sizeof(buf) - 1, f);

		buf[n] = '\0';
		fclose(f);
	}
	is_str(buf, "out\nerr\n", "stdout and stderr both went to its output file");
	opt.output_dir = NULL;
}

int
main(void)
{
	char		tmpl[] = "/tmp/tide_unit_command.XXXXXX";
	char		rm[PATH_MAX + 16];

	if (mkdtemp(tmpl) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", tmpl);
	setenv("PATH", "/usr/bin:/bin", 1);
	test_check();
	test_spawn();
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	if (system(rm) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
