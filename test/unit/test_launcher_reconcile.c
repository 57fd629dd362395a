/*
 * test_launcher_reconcile.c: tide-launcher's decisions without a database,
 * a shepherd or a state directory: the allocation states and their
 * transitions (alloc.c), and what one claim makes of the table
 * (reconcile.c).
 */
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "reconcile.h"

static ClaimRow
row(ClaimKind kind, int64_t id, const char *command)
{
	ClaimRow	r = {.kind = kind, .id = id, .job_id = id * 10, .replica = 0,
	.cvd = "", .command = command};

	return r;
}

static void
test_transitions(void)
{
	Alloc	   *a = alloc_add(1, 10, 0, AS_SPAWNING);

	ok(alloc_spawning(a) && !alloc_evicting(a) && !alloc_ended(a), "a new start is spawning");
	ok(alloc_set_state(a, AS_SPAWNING_EVICTED), "spawning -> spawning_evicted");
	ok(alloc_spawning(a) && alloc_evicting(a), "evicted while it starts: both");
	ok(!alloc_set_state(a, AS_RUNNING), "spawning_evicted -> running is refused");
	is_int(a->state, AS_SPAWNING_EVICTED, "and the state is kept");
	ok(alloc_set_state(a, AS_EVICTING), "spawning_evicted -> evicting (its pid came)");
	ok(alloc_set_state(a, AS_KILLED), "evicting -> killed");
	ok(!alloc_set_state(a, AS_EXITED), "killed -> exited is refused (it was evicted)");
	ok(alloc_set_state(a, AS_STOPPED), "killed -> stopped");
	ok(alloc_ended(a) && alloc_evicting(a), "stopped: ended, evicted");
	ok(!alloc_set_state(a, AS_RUNNING), "stopped is final");
	ok(!alloc_set_state(a, AS_EXITED), "stopped is final (exited)");

	a = alloc_add(2, 20, 0, AS_RUNNING);
	ok(alloc_set_state(a, AS_EXITED), "running -> exited");
	ok(!alloc_set_state(a, AS_STOPPED), "exited -> stopped is refused (an exit before the stop is reported as the exit, R-T6)");
	is_int(a->state, AS_EXITED, "and it stays exited");
	is_int((int) alloc_grace(a), 10, "no grace_period of its job: the launcher's (R-T3)");
	a->grace = 0;
	is_int((int) alloc_grace(a), 0, "a job's grace_period of 0 is its own");
	a = alloc_add(4, 40, 0, AS_RUNNING);
	ok(alloc_set_state(a, AS_EVICTING), "running -> evicting");
	ok(alloc_set_state(a, AS_EXITED), "evicting -> exited (it had ended before the stop was asked for)");
	alloc_remove(a);
	a = alloc_add(3, 30, 0, AS_SPAWNING);
	ok(alloc_set_state(a, AS_EXITED), "spawning -> exited (the start failed)");
	ok(!alloc_set_state(a, AS_EVICTING), "exited -> evicting is refused");
	is_str(alloc_state_name(AS_SPAWNING_EVICTED), "spawning_evicted", "state names");

	/* the table by id, after removals */
	alloc_remove(alloc_find(2));
	ok(alloc_find(2) == NULL && alloc_find(1) != NULL && alloc_find(3) != NULL, "remove keeps the others");
	while (nallocs > 0)
		alloc_remove(&allocs[0]);
	ok(alloc_find(1) == NULL && nallocs == 0, "empty again");
}

static void
test_reconcile(void)
{
	Alloc	   *a;
	ClaimRow	rows[16];
	Action		act[16];
	int			n = 0;

	/* the table: 100 running (started report owed or not), 101 spawning,
	 * 102 evicting, 103 exited, 104 running, 105 evicting */
	alloc_add(100, 1000, 0, AS_RUNNING)->pid = 5000;
	alloc_add(101, 1010, 0, AS_SPAWNING);
	a = alloc_add(102, 1020, 0, AS_RUNNING);
	a->pid = 5002;
	alloc_set_state(a, AS_EVICTING);
	alloc_add(103, 1030, 0, AS_EXITED);
	alloc_add(104, 1040, 0, AS_RUNNING)->pid = 5004;
	a = alloc_add(105, 1050, 0, AS_RUNNING);
	a->pid = 5005;
	alloc_set_state(a, AS_EVICTING);

	rows[n++] = row(CLAIM_RUN, 100, "true");	/* 0: known, running */
	rows[n++] = row(CLAIM_RUN, 101, "true");	/* 1: known, spawning */
	rows[n++] = row(CLAIM_RUN, 102, "true");	/* 2: known, evicting */
	rows[n++] = row(CLAIM_RUN, 200, "sleep 1");	/* 3: unknown */
	rows[n++] = row(CLAIM_RUN, 201, NULL);	/* 4: unknown, no command */
	rows[n++] = row(CLAIM_RUN, 202, " \t\n");	/* 5: unknown, blank */
	rows[n++] = row(CLAIM_STOP, 103, NULL);	/* 6: known, ended */
	rows[n++] = row(CLAIM_STOP, 203, NULL);	/* 7: unknown */
	rows[n++] = row(CLAIM_GONE, 104, NULL);	/* 8: known, running */
	rows[n++] = row(CLAIM_GONE, 105, NULL);	/* 9: known, already evicting */
	rows[n++] = row(CLAIM_GONE, 204, NULL);	/* 10: unknown */
	rows[n++] = row(CLAIM_WARN, 100, NULL);	/* 11: known, running */
	rows[n++] = row(CLAIM_WARN, 103, NULL);	/* 12: known, ended */
	rows[n++] = row(CLAIM_WARN, 205, NULL);	/* 13: unknown */
	alloc_find(100)->warn = WARN_ASK;

	is_int(reconcile(rows, n, true, act), n, "one action per row");
	is_int(act[0].kind, ACT_OWE_STARTED, "known and assigned: report the start again");
	ok(!act[0].unknown, "... known");
	is_int(act[1].kind, ACT_NONE, "being started: nothing (its answer reports it)");
	is_int(act[2].kind, ACT_NONE, "being evicted: nothing");
	is_int(act[3].kind, ACT_START, "unknown: start it");
	ok(act[3].unknown, "... after asking the state directory");
	is_int(act[4].kind, ACT_NO_COMMAND, "no command: report 127");
	is_int(act[5].kind, ACT_NO_COMMAND, "a blank command is none");
	is_int(act[6].kind, ACT_STOP, "eviction of an ended one: stop (reports evicted)");
	is_int(act[7].kind, ACT_STOP, "eviction of an unknown one: stop");
	ok(act[7].unknown, "... after asking the state directory");
	is_int(act[8].kind, ACT_GONE, "released behind our back: gone");
	is_int(act[9].kind, ACT_STOP, "released while already evicting: no second gone line");
	is_int(act[10].kind, ACT_GONE, "released, unknown: gone (if the state directory has it)");
	is_int(act[11].kind, ACT_WARN, "a warning's time for work that runs: noted (R-T2)");
	is_int(act[12].kind, ACT_NONE, "... not for work that ended");
	is_int(act[13].kind, ACT_NONE, "... nor for work unknown here");
	ok(!act[13].unknown, "... without asking the state directory");
	alloc_find(100)->warn = WARN_SENT;
	reconcile(rows, n, true, act);
	is_int(act[11].kind, ACT_NONE, "a warning sent is not noted again");
	alloc_find(100)->warn = WARN_NONE;
	for (int i = 0; i < n; i++)
		if (act[i].row != i)
			ok(0, "action %d names row %d", i, act[i].row);

	/* a state directory that refuses writes: nothing new starts */
	reconcile(rows, n, false, act);
	is_int(act[3].kind, ACT_ADOPT_ONLY, "cannot start: only adopt what is recorded");
	is_int(act[4].kind, ACT_ADOPT_ONLY, "... also without a command");
	is_int(act[0].kind, ACT_OWE_STARTED, "known ones are unaffected");
	is_int(act[7].kind, ACT_STOP, "evictions go on");

	/* the table is only read */
	is_int(nallocs, 6, "reconcile adds nothing to the table");
	ok(!alloc_find(100)->started_owed, "... and changes nothing in it");
	is_int(reconcile(rows, 0, true, act), 0, "an empty claim: no action");
}

/* R-C7: an id the database now gives to another allocation */
static void
test_reused_ids(void)
{
	ClaimRow	rows[8];
	Action		act[8];
	Alloc	   *a;
	int			n = 0;

	while (nallocs > 0)
		alloc_remove(&allocs[0]);
	a = alloc_add(300, 3000, 0, AS_RUNNING);
	a->pid = 6000;
	snprintf(a->token, sizeof(a->token), "%s", "11111111-1111-1111-1111-111111111111");
	a = alloc_add(301, 3010, 0, AS_RUNNING);
	a->pid = 6001;				/* adopted from an older launcher: no token */
	a = alloc_add(302, 3020, 0, AS_RUNNING);
	a->pid = 6002;
	snprintf(a->token, sizeof(a->token), "%s", "22222222-2222-2222-2222-222222222222");

	rows[n] = row(CLAIM_RUN, 300, "true");
	rows[n++].token = "33333333-3333-3333-3333-333333333333";	/* 0: same id, same job, other token */
	rows[n] = row(CLAIM_RUN, 300, "true");
	rows[n++].token = "11111111-1111-1111-1111-111111111111";	/* 1: ours */
	rows[n] = row(CLAIM_RUN, 301, "true");
	rows[n].job_id = 9999;		/* 2: no token here, another job */
	rows[n++].token = "44444444-4444-4444-4444-444444444444";
	rows[n] = row(CLAIM_RUN, 301, "true");
	rows[n++].token = "55555555-5555-5555-5555-555555555555";	/* 3: no token here, same job */
	rows[n] = row(CLAIM_STOP, 302, NULL);
	rows[n++].token = "66666666-6666-6666-6666-666666666666";	/* 4: evicting the new one */
	rows[n] = row(CLAIM_STOP, 302, NULL);
	rows[n++].token = "22222222-2222-2222-2222-222222222222";	/* 5: evicting ours */
	rows[n++] = row(CLAIM_GONE, 302, NULL);	/* 6: our own list: no token */
	reconcile(rows, n, true, act);
	is_int(act[0].kind, ACT_REPLACED, "a claimed id whose token is not ours: ours is stopped, the new one waits");
	is_int(act[1].kind, ACT_OWE_STARTED, "the same id and token: ours");
	is_int(act[2].kind, ACT_REPLACED, "no token known here, another job: replaced");
	is_int(act[3].kind, ACT_OWE_STARTED, "no token known here, the same job: taken as ours (older records)");
	is_int(act[4].kind, ACT_WAIT, "an eviction of the new allocation of our id waits until ours is gone");
	is_int(act[5].kind, ACT_STOP, "an eviction of ours goes on");
	is_int(act[6].kind, ACT_GONE, "released (gone) rows name ours");
	while (nallocs > 0)
		alloc_remove(&allocs[0]);
}

/* R-C8: one card's worth per GPU among the processes that live here */
static void
test_fence(void)
{
	Alloc	   *a;
	int			gpu;

	while (nallocs > 0)
		alloc_remove(&allocs[0]);
	ok(fence_holder("0,1", 0, &gpu) == NULL, "an empty node: no holder");
	a = alloc_add(400, 4000, 0, AS_RUNNING);
	a->cvd = strdup("3,7");
	ok(fence_holder("0,1,2", 0, &gpu) == NULL, "other GPUs: no holder");
	ok(fence_holder("", 0, &gpu) == NULL, "no GPU asked: no holder");
	ok(fence_holder("1,7", 0, &gpu) == a && gpu == 7, "GPU 7 is held by alloc 400");
	ok(fence_holder("7", 300, &gpu) == a, "a share of a whole GPU that is held: refused");
	alloc_set_state(a, AS_EVICTING);
	ok(fence_holder("7", 0, &gpu) == a, "a holder being stopped still holds it");
	alloc_set_state(a, AS_STOPPED);
	ok(fence_holder("7", 0, &gpu) == NULL, "an ended holder holds nothing");

	a = alloc_add(401, 4010, 0, AS_RUNNING);
	a->cvd = strdup("2");
	a->gpu_milli = 600;
	ok(fence_holder("2", 400, &gpu) == NULL, "600 + 400 thousandths fit one card");
	ok(fence_holder("2", 500, &gpu) == a && gpu == 2, "600 + 500 do not");
	ok(fence_holder("2", 0, &gpu) == a, "a whole GPU beside a share does not");

	a = alloc_add(402, 4020, 0, AS_SPAWNING);
	a->cvd = NULL;				/* adopted, its GPUs not known */
	ok(fence_holder("5", 0, &gpu) == a && gpu == -1, "a holder whose GPUs are not known holds them all");
	ok(fence_holder("", 0, &gpu) == NULL, "... but not a start without GPUs");
	while (nallocs > 0)
		alloc_remove(&allocs[0]);
}

int
main(void)
{
	test_transitions();
	test_reconcile();
	test_reused_ids();
	test_fence();
	return done_testing();
}
