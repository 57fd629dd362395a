/*
 * reconcile.c: from one claim and the table of known allocations to the
 * actions that bring this node in line with the database (see
 * reconcile.h).  Each allocation id comes at most once per claim (the
 * three kinds are three allocation states), so the actions do not depend
 * on each other and may be carried out in order.
 */
#include "reconcile.h"

#include <string.h>

/* A command that is NULL or blank: the job has nothing to run. */
bool
reconcile_no_command(const char *command)
{
	return command == NULL || command[strspn(command, " \t\n")] == '\0';
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
