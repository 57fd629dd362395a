/*
 * reconcile.c: from one claim and the table of known allocations to the
 * actions that bring this node in line with the database (see
 * reconcile.h).  Each allocation id comes at most once per claim (the
 * three kinds are three allocation states), so the actions do not depend
 * on each other and may be carried out in order.
 */
#include "reconcile.h"

#include <stdlib.h>
#include <string.h>

/* A command that is NULL or blank: the job has nothing to run. */
bool
reconcile_no_command(const char *command)
{
	return command == NULL || command[strspn(command, " \t\n")] == '\0';
}

/*
 * R-C7: does the row name another allocation than the known one of its id
 * (another job, or another token where both are known)?  An id handed
 * out again after a failover.
 */
bool
reconcile_other(const Alloc *a, const ClaimRow *r)
{
	return a->job_id != r->job_id ||
		(a->token[0] != '\0' && r->token != NULL && r->token[0] != '\0' &&
		 strcmp(a->token, r->token) != 0);
}

/* One action per row into actions[]; returns nrows. */
int
reconcile(const ClaimRow *rows, int nrows, bool can_start, Action *actions)
{
	for (int i = 0; i < nrows; i++)
	{
		const ClaimRow *r = &rows[i];
		const Alloc *a = alloc_find(r->id);
		Action	   *act = &actions[i];

		act->row = i;
		act->unknown = a == NULL;
		/*
		 * R-C7: the id is known here, but the database names another
		 * allocation by it (an id handed out again after a failover): ours
		 * has nothing behind it.  It must end, and leave the table, before
		 * the new one can be started or reported under the same id.
		 */
		if (a != NULL && (r->kind == CLAIM_RUN || r->kind == CLAIM_STOP) &&
			reconcile_other(a, r))
		{
			act->kind = r->kind == CLAIM_RUN ? ACT_REPLACED : ACT_WAIT;
			continue;
		}
		switch (r->kind)
		{
			case CLAIM_STOP:
				act->kind = ACT_STOP;
				break;
			case CLAIM_GONE:
				/* said once, when the stop begins */
				act->kind = a != NULL && alloc_evicting(a) ? ACT_STOP : ACT_GONE;
				break;
			case CLAIM_WARN:
				/* only for what runs here and has not been warned yet */
				act->kind = a != NULL && !alloc_ended(a) && !alloc_evicting(a) &&
					(a->warn == WARN_ASK || a->warn == WARN_NONE) ? ACT_WARN : ACT_NONE;
				act->unknown = false;
				break;
			case CLAIM_RUN:
				if (a != NULL)
					/* still assigned in the database: our started report is missing */
					act->kind = alloc_evicting(a) || alloc_spawning(a) ? ACT_NONE : ACT_OWE_STARTED;
				else if (!can_start)
					act->kind = ACT_ADOPT_ONLY;
				else if (reconcile_no_command(r->command))
					act->kind = ACT_NO_COMMAND;
				else
					act->kind = ACT_START;
				break;
		}
	}
	return nrows;
}

/* The GPU indices of a CUDA_VISIBLE_DEVICES list ("0,3"): how many. */
#define FENCE_MAX_GPUS 1024

static int
parse_gpus(const char *cvd, int *out, int max)
{
	int			n = 0;
	const char *p = cvd;

	while (p != NULL && *p != '\0' && n < max)
	{
		char	   *end;
		long		g = strtol(p, &end, 10);

		if (end == p)
			break;
		if (g >= 0 && g < FENCE_MAX_GPUS)
			out[n++] = (int) g;
		p = *end == ',' ? end + 1 : NULL;
	}
	return n;
}

/*
 * R-C8: one card's worth per GPU among the processes that still live here
 * (an ended allocation, EXITED or STOPPED, holds nothing), whatever the
 * database says: a whole GPU is 1000, a share its gpu_milli.  A holder
 * whose GPUs are not known (adopted work the database no longer has) is
 * taken to hold them all.
 */
const Alloc *
fence_holder(const char *cvd, int gpu_milli, int *gpu)
{
	int			want[64];
	int			nwant = parse_gpus(cvd, want, 64);
	int			need = gpu_milli > 0 ? gpu_milli : 1000;

	*gpu = -1;
	if (nwant == 0)
		return NULL;
	for (int w = 0; w < nwant; w++)
	{
		int			used = 0;
		const Alloc *first = NULL;

		for (int i = 0; i < nallocs; i++)
		{
			const Alloc *a = &allocs[i];
			int			held[64];
			int			nheld;

			if (alloc_ended(a))
				continue;
			if (a->cvd == NULL)
				return a;
			nheld = parse_gpus(a->cvd, held, 64);
			for (int h = 0; h < nheld; h++)
				if (held[h] == want[w])
				{
					used += a->gpu_milli > 0 ? a->gpu_milli : 1000;
					if (first == NULL)
						first = a;
				}
		}
		if (first != NULL && used + need > 1000)
		{
			*gpu = want[w];
			return first;
		}
	}
	return NULL;
}
