/*
 * reasons.c: human-readable pending reasons with numbers (R-C2).
 *
 * The engine records reasons as small structs while it walks (no text in
 * the hot loop); the caller renders the jobs it writes back.  Every
 * blocking reason is kept (up to TIDE_MAX_REASONS), joined by "; ".
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"
#include "hash.h"

/*
 * The distinct reason lists of a decide call, each stored once in
 * r->reasons: most pending jobs share a few lists (a failed shape answers
 * for every job of that shape), so an outcome keeps only where its list
 * starts.  Open addressing over (start + 1, length), grown at half full.
 */
typedef struct TideReasonSets
{
	int32_t    *slot;			/* start + 1 of a list, 0 = empty */
	int8_t	   *len;			/* its length */
	uint32_t	mask;
	int32_t		used;
	int32_t		cap;			/* TideReasons room in r->reasons */
} TideReasonSets;

#define RSET_WORDS (sizeof(TideReason) / sizeof(uint64_t))

static uint64_t
rset_hash(const TideReason *x, int n)
{
	uint64_t	h = (uint64_t) n;
	const char *p = (const char *) x;

	for (size_t i = 0; i < (size_t) n * RSET_WORDS; i++)
	{
		uint64_t	v;

		memcpy(&v, p + i * sizeof(uint64_t), sizeof(v));
		h = tide_hash_mix(h, v);
	}
	return h;
}

static void
rset_insert(TideReasonSets *t, const TideReason *pool, int32_t start, int n)
{
	uint32_t	k = (uint32_t) tide_hash_slot(rset_hash(pool + start, n), t->mask);

	while (t->slot[k])
		k = (k + 1) & t->mask;
	t->slot[k] = start + 1;
	t->len[k] = (int8_t) n;
}

static void
rset_grow_table(TideWork *w, TideReasonSets *t)
{
	uint32_t	old = t->mask + 1;
	int32_t    *slot = t->slot;
	int8_t	   *len = t->len;

	t->mask = old * 2 - 1;
	t->slot = tide_work_alloc(w, sizeof(int32_t) * (t->mask + 1));
	t->len = tide_work_alloc(w, sizeof(int8_t) * (t->mask + 1));
	for (uint32_t i = 0; i < old; i++)
		if (slot[i])
			rset_insert(t, w->r->reasons, slot[i] - 1, len[i]);
	tide_work_release(w, slot);
	tide_work_release(w, len);
}

/* Where list x[0..n-1] starts in r->reasons, stored there if new. */
static int32_t
rset_intern(TideWork *w, const TideReason *x, int n)
{
	TideResult *r = w->r;
	TideReasonSets *t = w->rsets;
	uint32_t	k;

	if (t == NULL)
	{
		t = w->rsets = tide_work_alloc(w, sizeof(TideReasonSets));
		t->mask = 255;
		t->slot = tide_work_alloc(w, sizeof(int32_t) * (t->mask + 1));
		t->len = tide_work_alloc(w, sizeof(int8_t) * (t->mask + 1));
	}
	k = (uint32_t) tide_hash_slot(rset_hash(x, n), t->mask);
	while (t->slot[k])
	{
		if (t->len[k] == n &&
			memcmp(r->reasons + t->slot[k] - 1, x, sizeof(TideReason) * n) == 0)
			return t->slot[k] - 1;
		k = (k + 1) & t->mask;
	}
	if (r->nreasons + n > t->cap)
	{
		int32_t		cap = t->cap ? t->cap * 2 : 256;

		while (cap < r->nreasons + n)
			cap *= 2;
		r->reasons = tide_work_grow(w, r->reasons, sizeof(TideReason) * t->cap,
									sizeof(TideReason) * cap);
		t->cap = cap;
	}
	memcpy(r->reasons + r->nreasons, x, sizeof(TideReason) * n);
	t->slot[k] = r->nreasons + 1;
	t->len[k] = (int8_t) n;
	r->nreasons += n;
	if (++t->used * 2 > (int32_t) t->mask)
		rset_grow_table(w, t);
	return r->nreasons - n;
}

void
tide_reason_add(TideWork *w, TideOutcome *o, int code, int res, int role,
				int64_t a, int64_t b, int64_t c, int64_t ref)
{
	TideReason	list[TIDE_MAX_REASONS];
	const TideReason *cur = tide_outcome_reasons(w->r, o);
	TideReason *x;

	for (int i = 0; i < o->nreasons; i++)
		if (cur[i].code == code && cur[i].res == res)
			return;				/* one per kind and resource */
	if (o->nreasons >= TIDE_MAX_REASONS)
		return;
	if (o->nreasons > 0)
		memcpy(list, cur, sizeof(TideReason) * o->nreasons);
	x = &list[o->nreasons];
	memset(x, 0, sizeof(*x));
	x->code = (int16_t) code;
	x->res = (int16_t) res;
	x->role = role;
	x->a = a;
	x->b = b;
	x->c = c;
	x->ref = ref;
	o->reasons = rset_intern(w, list, o->nreasons + 1);
	o->nreasons++;
}

/* A milli quantity as text: 8, 0.5, 16Gi (for exact binary multiples). */
static void
fmt_qty(char *buf, size_t len, int64_t milli)
{
	int64_t		whole = milli / TIDE_MILLI;
	int64_t		frac = milli % TIDE_MILLI;
	static const char *const suffix[] = {"Ki", "Mi", "Gi", "Ti", "Pi"};

	if (milli == TIDE_UNLIMITED)
	{
		snprintf(buf, len, "unlimited");
		return;
	}
	if (frac != 0)
	{
		char		f[8];
		int			n;

		snprintf(f, sizeof(f), "%03" PRId64, frac < 0 ? -frac : frac);
		n = 3;
		while (n > 0 && f[n - 1] == '0')
			f[--n] = '\0';
		snprintf(buf, len, "%s%" PRId64 ".%s", milli < 0 && whole == 0 ? "-" : "", whole, f);
		return;
	}
	if (whole >= 1024 && whole % 1024 == 0)
	{
		int			k = -1;

		while (k < 4 && whole % 1024 == 0 && whole >= 1024)
		{
			whole /= 1024;
			k++;
		}
		snprintf(buf, len, "%" PRId64 "%s", whole, suffix[k]);
		return;
	}
	snprintf(buf, len, "%" PRId64, whole);
}

/*
 * An amount (used, asked) as text: INT64_MAX there is a sum that saturated
 * (satmath.h), so it reads as a bound, not as "unlimited".
 */
static void
fmt_amount(char *buf, size_t len, int64_t milli)
{
	if (milli == INT64_MAX)
	{
		snprintf(buf, len, "%" PRId64 ".%03d or more", milli / TIDE_MILLI, (int) (milli % TIDE_MILLI));
		return;
	}
	fmt_qty(buf, len, milli);
}

/* "cpu=4, gpu=2": the nonzero components of a request, by name like resvec text. */
static void
fmt_vec(const TideSnapshot *s, char *buf, size_t len, const int64_t *v)
{
	size_t		off = 0;
	int			order[TIDE_MAX_RES];

	for (int r = 0; r < s->nres; r++)
	{
		int			k = r;

		while (k > 0 && strcmp(s->res_names[order[k - 1]], s->res_names[r]) > 0)
		{
			order[k] = order[k - 1];
			k--;
		}
		order[k] = r;
	}
	buf[0] = '\0';
	for (int i = 0; i < s->nres && off + 1 < len; i++)
	{
		char		q[32];
		int			r = order[i];

		if (v[r] == 0)
			continue;
		fmt_qty(q, sizeof(q), v[r]);
		off += snprintf(buf + off, len - off, "%s%s=%s", off ? ", " : "", s->res_names[r], q);
	}
	if (off >= len)
		buf[len - 1] = '\0';
}

static const char *
res_name(const TideSnapshot *s, int r)
{
	return r >= 0 && r < s->nres ? s->res_names[r] : "?";
}

static const char *
queue_name(const TideSnapshot *s, int64_t q)
{
	return q >= 0 && q < s->nqueues ? s->queues[q].name : "?";
}

/* Render one reason. */
static void
render(const TideSnapshot *s, const TideJob *job, const TideReason *x, char *buf, size_t len)
{
	char		a[48],
				b[48],
				c[32],
				req[160];
	const TideRole *role = x->code != R_HELD_QUEUE && x->role >= 0 && x->role < job->nroles
		? &job->roles[x->role] : NULL;
	const char *rn = res_name(s, x->res);

	fmt_amount(a, sizeof(a), x->a);
	if (x->code == R_CAP_NEVER || x->code == R_TOO_BIG)
		fmt_qty(b, sizeof(b), x->b);	/* a limit or a capacity */
	else
		fmt_amount(b, sizeof(b), x->b);
	fmt_qty(c, sizeof(c), x->c);
	req[0] = '\0';
	if (role)
		fmt_vec(s, req, sizeof(req), role->request);
	switch (x->code)
	{
		case R_CAPABILITY:
		case R_CARD_CAP:
		case R_CARD_QUOTA:
			snprintf(buf, len, "queue %s %s %s: %s used + %s asked > %s",
					 queue_name(s, x->ref), rn, x->code == R_CARD_QUOTA ? "quota" : "capability",
					 a, b, c);
			break;
		case R_QUOTA_IDLE:
			snprintf(buf, len, "idle jobs: group %s %s used by non-idle jobs + %s asked > %s",
					 rn, a, b, c);
			break;
		case R_HELD:
			snprintf(buf, len, "held for job %" PRId64 " (%" PRId64 " node%s)",
					 x->ref, x->a, x->a == 1 ? "" : "s");
			break;
		case R_HELD_QUEUE:
			snprintf(buf, len, "queue %s %s held for job %" PRId64 ": %s used and held + %s asked > %s",
					 queue_name(s, x->role), rn, x->ref, a, b, c);
			break;
		case R_GANG:
			snprintf(buf, len, "gang %" PRId64 " x %s: best fit places %" PRId64,
					 x->a, req, x->b);
			break;
		case R_NO_ROOM:
			if (x->ref >= 0)
				snprintf(buf, len, "no ready node has room for %s (%" PRId64 " node%s: short of %s on %" PRId64 ", %s on %" PRId64 ")",
						 req, x->a, x->a == 1 ? "" : "s", rn, x->b, res_name(s, (int) x->ref), x->c);
			else if (x->res >= 0)
				snprintf(buf, len, "no ready node has room for %s (%" PRId64 " node%s: short of %s on %" PRId64 ")",
						 req, x->a, x->a == 1 ? "" : "s", rn, x->b);
			else
				snprintf(buf, len, "no ready node has room for %s (%" PRId64 " node%s)", req, x->a,
						 x->a == 1 ? "" : "s");
			break;
		case R_NOT_READY:
			if (x->ref >= 0)
				snprintf(buf, len, "no ready node with gpu_type %s (%" PRId64 " draining or down)",
						 res_name(s, (int) x->ref), x->a);
			else
				snprintf(buf, len, "no ready node for %s (%" PRId64 " draining or down)", req, x->a);
			break;
		case R_AVOID:
			snprintf(buf, len, "%" PRId64 " node%s avoided: a previous attempt failed there",
					 x->a, x->a == 1 ? "" : "s");
			break;
		case R_NO_TYPE:
			if (x->ref >= 0)
				snprintf(buf, len, "no node with gpu_type %s in the resource group", res_name(s, (int) x->ref));
			else
				snprintf(buf, len, "no GPU node in the resource group");
			break;
		case R_NO_LABEL:
			{
				size_t		off = snprintf(buf, len, "no node has labels");

				for (int i = 0; i < job->nselector && off + 1 < len; i++)
					off += snprintf(buf + off, len - off, "%s%s", i ? ", " : " ",
									tide_label_name(s, job->selector[i]));
			}
			break;
		case R_TOO_BIG:
			snprintf(buf, len, "%s per replica: %s %s is more than any matching node has (largest %s)",
					 req, rn, a, b);
			break;
		case R_CAP_NEVER:
			snprintf(buf, len, "queue %s %s capability is %s, the job needs %s",
					 queue_name(s, x->ref), rn, b, a);
			break;
		case R_FRACTION:
			snprintf(buf, len, "gpu=%s: requests above one GPU must be whole numbers", a);
			break;
		case R_CPU_ON_GPU:
			snprintf(buf, len, "no CPU node in the resource group, and CPU jobs may not use GPU nodes");
			break;
		case R_NO_NODES:
			snprintf(buf, len, "no node in queue %s's resource group", queue_name(s, x->ref));
			break;
		case R_TOO_MANY_GPUS:
			snprintf(buf, len, "gpu=%s: more than %d GPUs per replica", a, TIDE_MAX_GPUS);
			break;
		case R_NO_TASKS:
			snprintf(buf, len, "the job has no task with replicas");
			break;
		case R_UNKNOWN_NAME:
			snprintf(buf, len, "%s", s->unknown_names[x->ref]);
			break;
		case R_EVICT_WAIT:
			snprintf(buf, len, "waiting for the jobs evicted for it to stop; their resources are held for it");
			break;
		case R_UNCOUNTABLE:
			snprintf(buf, len, "the job's gang minimum of %s is more than the scheduler can count "
					 "(at most %" PRId64 ".%03d in total)",
					 rn, (INT64_MAX - 1) / TIDE_MILLI, (int) ((INT64_MAX - 1) % TIDE_MILLI));
			break;
		case R_EVICTING:
			snprintf(buf, len, "evicting %" PRId64 " job%s to make room for it",
					 x->a, x->a == 1 ? "" : "s");
			break;
		default:
			snprintf(buf, len, "reason %d", x->code);
	}
}

/* Every reason of job j, "; "-joined, into buf; returns the length. */
size_t
tide_reason_text(const TideSnapshot *s, const TideResult *r, int job,
				 char *buf, size_t buflen)
{
	const TideOutcome *o = &r->outcomes[job];
	size_t		off = 0;

	if (buflen == 0)
		return 0;
	buf[0] = '\0';
	for (int i = 0; i < o->nreasons && off + 1 < buflen; i++)
	{
		char		one[512];

		render(s, &s->jobs[job], &tide_outcome_reasons(r, o)[i], one, sizeof(one));
		off += snprintf(buf + off, buflen - off, "%s%s", i ? "; " : "", one);
	}
	if (off >= buflen)
		off = buflen - 1;
	return off;
}
