/*
 * db.h: tide-launcher's statements, through the launcher functions of the
 * SQL contract only.  SQL in, rows and outcomes out: it knows nothing of
 * the allocation table or of processes.
 */
#ifndef TIDE_LAUNCHER_DB_H
#define TIDE_LAUNCHER_DB_H

#include "reconcile.h"			/* ClaimRow (the type only) */

/* How a statement went. */
typedef enum QueryOutcome
{
	Q_OK,						/* done */
	Q_REFUSED,					/* a SQL error: retrying the same will not help */
	Q_RETRY,					/* a transient error (serialization, lock...) */
	Q_LOST						/* the connection is gone (now disconnected) */
} QueryOutcome;

typedef enum ReportKind
{
	R_STARTED,
	R_EXITED,
	R_EVICTED
} ReportKind;

/* What the database made of one allocation's report. */
typedef enum ReportOutcome
{
	REPORT_CHANGED,				/* it moved */
	REPORT_ALREADY,				/* it was in the reported state already */
	REPORT_REFUSED				/* nothing changed: see reason */
} ReportOutcome;

/* An allocation as the launcher names it to the database (R-C7). */
typedef struct AllocName
{
	int64_t		id;
	int64_t		job_id;
	const char *token;			/* tide.allocations.token; NULL or "": not
								 * known (matches any token of that id and
								 * job) */
} AllocName;

/* tide.reconcile's answer for one allocation (R-C7). */
typedef enum ReconcileAction
{
	RECON_KEEP,					/* a live allocation of this node: go on */
	RECON_STOP,					/* nothing live behind it: stop it */
	RECON_RELEASED				/* the database had it running here and
								 * released it now (we do not run it) */
} ReconcileAction;

typedef struct ReconcileRow
{
	int64_t		id;
	int64_t		job_id;
	ReconcileAction action;
	const char *reason;			/* "" for RECON_KEEP */
	const char *token;			/* the database's, when it is ours */
	const char *gpus;			/* RECON_KEEP: its CUDA_VISIBLE_DEVICES;
								 * NULL otherwise */
	int			gpu_milli;		/* RECON_KEEP: its share, 0: whole GPUs */
} ReconcileRow;

typedef struct ReportResult
{
	int64_t		id;
	ReportOutcome outcome;
	const char *reason;			/* REPORT_REFUSED: why */
} ReportResult;

bool		db_connected(void);
int			db_socket(void);
bool		db_connect(bool first);
void		db_disconnect(const char *why);
bool		db_consume_input(void);
bool		db_heartbeat(void);
QueryOutcome db_claim(const AllocName *running, int nrunning, const AllocName *asking, int nasking,
					 ClaimRow **rows, int *nrows);
QueryOutcome db_reconcile(const AllocName *known, int nknown, ReconcileRow **rows, int *nrows);
QueryOutcome db_report(ReportKind kind, const int64_t *ids, const char *const *tokens,
					   const int *codes, const char *const *reasons, const double *agos,
					   int n, ReportResult **results);
const char *db_report_name(ReportKind kind);
const char *db_error(void);

#endif							/* TIDE_LAUNCHER_DB_H */
