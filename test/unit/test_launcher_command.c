/*
 * test_launcher_command.c: the launcher's own reasons for not running a
 * command (command.c): command_check looks at the job's workdir and up the
 * program a command names first, as sh would, and says why it cannot run;
 * spawn_command says which step of a start failed, and
 * spawn_failure_reason how the job hears of it; job_environ builds what
 * the command sees (the job's env, its TIDE_* variables).  Real files and
 * processes in a scratch directory; no database.
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
	return command_check(command, NULL, why, TL_REASON_MAX);
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
	spawn_failure_reason(failure, rc, spec.id, spec.job_id, spec.replica, NULL, why, sizeof(why));
	snprintf(want, sizeof(want), "cannot open output file %s/job-2-0-1.log: No such file or directory", missing);
	is_str(why, want, "... and the reason names the file and the error");

	spawn_failure_reason(SPAWN_FAILED_SHELL, EACCES, 1, 2, 0, NULL, why, sizeof(why));
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

/* The value of name in envp, or NULL; how many entries set it in *count. */
static const char *
env_get(char **envp, const char *name, int *count)
{
	const char *found = NULL;
	size_t		n = strlen(name);

	*count = 0;
	for (int i = 0; envp[i]; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
		{
			found = envp[i] + n + 1;
			(*count)++;
		}
	return found;
}

static void
test_environ(void)
{
	char	   *base[] = {"PATH=/usr/bin:/bin", "HOME=/home/l", "EPOCHS=1", "CUDA_VISIBLE_DEVICES=7",
		"TIDE_JOB_ID=999", "TIDE_ARRAY_INDEX=5", "PGPASSWORD=secret", NULL};
	/* EPOCHS=10, NOTE="a b\nc" (a blank and a newline), EMPTY="", a bad pair */
	SpawnSpec	spec = {.id = 11, .job_id = 22, .replica = 3, .command = "true",
		.cuda_visible_devices = "0,1", .role = "worker",
		.env = "EPOCHS=3130  NOTE=6120620a63 EMPTY= BAD=6 PATH=2f6f70742f62696e"};
	char	  **envp;
	int			n;
	const char *v;

	opt.node = "gpu01";
	envp = job_environ(&spec, base);
	ok(envp != NULL, "job_environ builds an environment");
	v = env_get(envp, "EPOCHS", &n);
	ok(v && strcmp(v, "10") == 0 && n == 1, "the job's EPOCHS replaces the inherited one, once");
	v = env_get(envp, "NOTE", &n);
	ok(v && strcmp(v, "a b\nc") == 0, "a value with a blank and a newline comes through whole");
	v = env_get(envp, "EMPTY", &n);
	ok(v && strcmp(v, "") == 0, "an empty value is exported empty");
	v = env_get(envp, "BAD", &n);
	ok(v == NULL, "a malformed pair is left out");
	v = env_get(envp, "PATH", &n);
	ok(v && strcmp(v, "/opt/bin") == 0 && n == 1, "the job may set PATH");
	v = env_get(envp, "HOME", &n);
	ok(v && strcmp(v, "/home/l") == 0, "the launcher's own variables are inherited");
	ok(env_get(envp, "PGPASSWORD", &n) == NULL, "but not its database password");
	v = env_get(envp, "CUDA_VISIBLE_DEVICES", &n);
	ok(v && strcmp(v, "0,1") == 0 && n == 1, "CUDA_VISIBLE_DEVICES is the allocation's, once");
	v = env_get(envp, "TIDE_JOB_ID", &n);
	ok(v && strcmp(v, "22") == 0 && n == 1, "TIDE_JOB_ID is the job's, once");
	v = env_get(envp, "TIDE_ROLE", &n);
	ok(v && strcmp(v, "worker") == 0, "TIDE_ROLE");
	v = env_get(envp, "TIDE_NODE", &n);
	ok(v && strcmp(v, "gpu01") == 0, "TIDE_NODE");
	ok(env_get(envp, "TIDE_ARRAY_ID", &n) == NULL && env_get(envp, "TIDE_ARRAY_INDEX", &n) == NULL,
	   "no TIDE_ARRAY_* for a job of its own (nor the inherited one)");
	free_environ(envp);

	spec.env = NULL;
	spec.array_id = "40";
	spec.array_index = "7";
	envp = job_environ(&spec, base);
	v = env_get(envp, "TIDE_ARRAY_ID", &n);
	ok(v && strcmp(v, "40") == 0 && n == 1, "an array member: TIDE_ARRAY_ID");
	v = env_get(envp, "TIDE_ARRAY_INDEX", &n);
	ok(v && strcmp(v, "7") == 0 && n == 1, "... and TIDE_ARRAY_INDEX, once");
	v = env_get(envp, "EPOCHS", &n);
	ok(v && strcmp(v, "1") == 0, "no env: the inherited EPOCHS stays");
	free_environ(envp);
}

static void
test_workdir(void)
{
	char		why[TL_REASON_MAX];
	char		want[PATH_MAX + 128];
	char		sub[PATH_MAX / 2];
	char		file[PATH_MAX];
	char		buf[PATH_MAX] = "";
	SpawnSpec	spec = {.id = 5, .job_id = 6, .replica = 0, .command = "pwd > where; echo \"$GREETING\" >> where",
	.cuda_visible_devices = "", .env = "GREETING=6869"};
	SpawnFailure failure;
	pid_t		pid = 0;
	int			rc,
				status;
	FILE	   *f;

	snprintf(sub, sizeof(sub), "%s/no-such-workdir", dir);
	why[0] = '\0';
	is_int(command_check("true", sub, why, sizeof(why)), 126, "a workdir that is not there: 126");
	snprintf(want, sizeof(want), "workdir %s does not exist", sub);
	is_str(why, want, "... and the reason names it");

	snprintf(file, sizeof(file), "%s/plain.sh", dir);
	is_int(command_check("true", file, why, sizeof(why)), 126, "a workdir that is a file: 126");
	snprintf(want, sizeof(want), "workdir %s is not a directory", file);
	is_str(why, want, "... named");

	spec.workdir = sub;
	rc = spawn_command(&spec, &pid, true, &failure);
	is_int(rc, ENOENT, "spawn_command in a workdir that is gone: ENOENT");
	is_int(failure, SPAWN_FAILED_WORKDIR, "... at the workdir");
	spawn_failure_reason(failure, rc, spec.id, spec.job_id, spec.replica, spec.workdir, why, sizeof(why));
	snprintf(want, sizeof(want), "cannot enter workdir %s: No such file or directory", sub);
	is_str(why, want, "... and the reason names it");

	mkdir(sub, 0755);
	snprintf(file, sizeof(file), "%s/run.sh", sub);
	f = fopen(file, "w");
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	chmod(file, 0755);
	is_int(command_check("./run.sh --fast", sub, why, sizeof(why)), 0, "a relative program is looked up in the workdir");
	is_int(command_check("./run.sh", NULL, why, sizeof(why)), 127, "(and not found outside it)");
	is_int(command_check("true", sub, why, sizeof(why)), 0, "a workdir that is there: it starts");

	rc = spawn_command(&spec, &pid, true, &failure);
	is_int(rc, 0, "started in its workdir");
	ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "... and it exited 0");
	snprintf(file, sizeof(file), "%s/where", sub);
	f = fopen(file, "r");
	if (f)
	{
		size_t		n = fread(buf, 1, sizeof(buf) - 1, f);

		buf[n] = '\0';
		fclose(f);
	}
	snprintf(want, sizeof(want), "%s\nhi\n", sub);
	is_str(buf, want, "the command ran in its workdir, with the job's env");
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
	test_environ();
	test_workdir();
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	if (system(rm) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
