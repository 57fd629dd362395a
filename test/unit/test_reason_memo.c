/*
 * test_reason_memo.c: tide_reason_memo_text() gives, for every job, exactly
 * the text tide_reason_text() renders, and equal text ids exactly for equal
 * texts: jobs that share every input share one rendering, and jobs that
 * differ in anything the text shows (request, selector, queue, numbers) do
 * not share a text by mistake.
 */
#include "tap.h"
#include "test_engine_fixture.h"

static const FxQueue QUEUES[] = {{"qa", "gpu=2"}, {"qb", NULL, "gpu=4"}};

/* Checks one decided cluster; returns the number of distinct texts. */
static int
check_memo(Fx *fx, const char *what)
{
	TideReasonMemo *m = tide_reason_memo_create(fx->s, fx->r);
	int			n = fx->s->njobs;
	char	  **direct = calloc((size_t) n, sizeof(char *));
	int32_t    *ids = calloc((size_t) n, sizeof(int32_t));
	int			bad_text = 0,
				bad_id = 0,
				distinct = 0;
	char		buf[1024];

	for (int j = 0; j < n; j++)
	{
		const char *t = tide_reason_memo_text(m, j, &ids[j]);

		tide_reason_text(fx->s, fx->r, j, buf, sizeof(buf));
		direct[j] = strdup(buf);
		if (strcmp(t, buf) != 0 && bad_text++ < 3)
			diag("%s: job %lld memo \"%s\", direct \"%s\"", what, (long long) fx->s->jobs[j].id, t, buf);
		if (ids[j] + 1 > distinct)
			distinct = ids[j] + 1;
	}
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			if ((ids[a] == ids[b]) != (strcmp(direct[a], direct[b]) == 0) && bad_id++ < 3)
				diag("%s: jobs %d and %d: ids %d/%d, texts \"%s\" / \"%s\"", what, a, b,
					 ids[a], ids[b], direct[a], direct[b]);
	is_int(bad_text, 0, "%s: every memo text equals the direct rendering", what);
	is_int(bad_id, 0, "%s: equal text ids exactly for equal texts", what);
	for (int j = 0; j < n; j++)
		free(direct[j]);
	free(direct);
	free(ids);
	return distinct;
}

int
main(void)
{
	FxNode		nodes[] = {
		{"n1", "cpu=16, memory=64Gi, gpu=2", "H100", NULL, "zone=a"},
		{"n2", "cpu=16, memory=64Gi, gpu=2", "H100", NULL, "zone=b"},
	};
	FxJob		jobs[440];
	int			nj = 0;
	Fx			fx;
	int			distinct;

	/* 300 identical jobs behind a full cluster: one text */
	for (int i = 0; i < 300; i++)
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qa", .created = nj, .req = "cpu=1, gpu=1"};
	/* the same reason code with other requests, queues, selectors, gangs */
	for (int i = 0; i < 20; i++)
	{
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qa", .created = nj, .req = "cpu=2, gpu=1"};
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qb", .created = nj, .req = "cpu=1, gpu=1"};
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qa", .created = nj, .req = "cpu=1, gpu=1", .selector = "zone=c"};
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qa", .created = nj, .req = "cpu=1, gpu=1", .selector = "rack=r9"};
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qb", .created = nj, .req = "cpu=1, gpu=2", .replicas = 3};
	}
	/* selectors longer than the memo's first key room, differing last */
	for (int i = 0; i < 20; i++)
	{
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qa", .created = nj, .req = "cpu=1, gpu=1",
		.selector = "a=1, b=2, c=3, d=4, e=5, f=6, g=7, zone=c"};
		jobs[nj++] = (FxJob) {.id = 1 + nj, .queue = "qa", .created = nj, .req = "cpu=1, gpu=1",
		.selector = "a=1, b=2, c=3, d=4, e=5, f=6, g=7, zone=d"};
	}
	fx_build(&fx, nodes, 2, QUEUES, 2, jobs, nj, NULL, 0);
	fx.r = tide_decide(fx.s);
	ok(fx.r->counters.jobs_placed > 0 && fx.r->counters.jobs_pending > 300, "the cluster places some and leaves most pending");
	distinct = check_memo(&fx, "backlog");
	ok(distinct >= 5 && distinct <= 20, "a 440-job backlog has a handful of distinct texts (%d)", distinct);
	fx_free(&fx);

	/* a cluster where nothing is pending: placed jobs have empty texts */
	nj = 0;
	jobs[nj++] = (FxJob) {.id = 1, .queue = "qa", .created = 1, .req = "cpu=1"};
	fx_build(&fx, nodes, 2, QUEUES, 2, jobs, nj, NULL, 0);
	fx.r = tide_decide(fx.s);
	check_memo(&fx, "nothing pending");
	fx_free(&fx);
	return done_testing();
}
