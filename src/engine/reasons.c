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
#include "reasons.h"

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

/* The rows of reasons.def, by code. */
typedef struct ReasonRow
{
	const char *rule;
	const char *text;
} ReasonRow;

static const ReasonRow reason_rows[R_COUNT] = {
#define TIDE_REASON(CODE, name, rule, params, fields, text) [R_##CODE] = {rule, text},
#include "reasons.def"
#undef TIDE_REASON
};

const char *
tide_reason_rule(int code)
{
	return code > R_NONE && code < R_COUNT ? reason_rows[code].rule : "?";
}

/*
 * What a reason is rendered against: the snapshot and the job, or, for a
 * sentence about a name the snapshot does not have, that name (every
 * queue and resource name reads as it).
 */
typedef struct RenderCtx
{
	const TideSnapshot *s;
	const TideJob *job;
	const TideReason *x;
	const char *name;
} RenderCtx;

/* A text appended at *off in buf of len bytes, cut at its end. */
static void
put(char *buf, size_t len, size_t *off, const char *text, size_t n)
{
	if (*off + 1 >= len)
		return;
	if (n > len - 1 - *off)
		n = len - 1 - *off;
	memcpy(buf + *off, text, n);
	*off += n;
	buf[*off] = '\0';
}

static int64_t
field(const TideReason *x, const char *f, size_t n)
{
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(f, lit, n) == 0)
	if (IS("res"))
		return x->res;
	if (IS("role"))
		return x->role;
	if (IS("a"))
		return x->a;
	if (IS("b"))
		return x->b;
	if (IS("c"))
		return x->c;
	if (IS("ref"))
		return x->ref;
#undef IS
	return -1;
}

static const char *
res_name(const RenderCtx *ctx, int64_t r)
{
	if (ctx->name)
		return ctx->name;
	return r >= 0 && r < ctx->s->nres ? ctx->s->res_names[r] : "?";
}

static const char *
queue_name(const RenderCtx *ctx, int64_t q)
{
	if (ctx->name)
		return ctx->name;
	return q >= 0 && q < ctx->s->nqueues ? ctx->s->queues[q].name : "?";
}

/* One placeholder, {what} or {field:how}, at p (n bytes, no braces). */
static void
render_placeholder(const RenderCtx *ctx, const char *p, size_t n, char *buf, size_t len, size_t *off)
{
	const TideReason *x = ctx->x;
	const char *colon = memchr(p, ':', n);
	char		one[192];

	one[0] = '\0';
	if (colon == NULL)
	{
		if (n == 3 && memcmp(p, "res", 3) == 0)
			snprintf(one, sizeof(one), "%s", res_name(ctx, x->res));
		else if (n == 3 && memcmp(p, "req", 3) == 0)
		{
			if (ctx->job && x->role >= 0 && x->role < ctx->job->nroles)
				fmt_vec(ctx->s, one, sizeof(one), ctx->job->roles[x->role].request);
		}
		else if (n == 6 && memcmp(p, "labels", 6) == 0)
		{
			for (int i = 0; ctx->job && i < ctx->job->nselector; i++)
			{
				const char *l = tide_label_name(ctx->s, ctx->job->selector[i]);

				put(buf, len, off, i ? ", " : " ", 2 - (i == 0));
				put(buf, len, off, l, strlen(l));
			}
		}
		else if (n == 7 && memcmp(p, "maxgpus", 7) == 0)
			snprintf(one, sizeof(one), "%d", TIDE_MAX_GPUS);
		else if (n == 8 && memcmp(p, "countmax", 8) == 0)
			snprintf(one, sizeof(one), "%" PRId64 ".%03d",
					 (INT64_MAX - 1) / TIDE_MILLI, (int) ((INT64_MAX - 1) % TIDE_MILLI));
	}
	else
	{
		int64_t		v = field(x, p, colon - p);
		const char *how = colon + 1;
		size_t		hn = n - (colon - p) - 1;

#define HOW(lit) (hn == sizeof(lit) - 1 && memcmp(how, lit, hn) == 0)
		if (HOW("amount"))
			fmt_amount(one, sizeof(one), v);
		else if (HOW("qty"))
			fmt_qty(one, sizeof(one), v);
		else if (HOW("n"))
			snprintf(one, sizeof(one), "%" PRId64, v);
		else if (HOW("s"))
			snprintf(one, sizeof(one), "%s", v == 1 ? "" : "s");
		else if (HOW("queue"))
			snprintf(one, sizeof(one), "%s", queue_name(ctx, v));
		else if (HOW("resname"))
			snprintf(one, sizeof(one), "%s", res_name(ctx, v));
		else if (HOW("owner"))
		{
			if (ctx->s && v >= 0 && v < ctx->s->nowners && ctx->s->owner_names && ctx->s->owner_names[v])
				snprintf(one, sizeof(one), "%s", ctx->s->owner_names[v]);
			else
				snprintf(one, sizeof(one), "owner %" PRId64, v);
		}
		else if (HOW("unknown"))
			snprintf(one, sizeof(one), "%s",
					 ctx->name ? ctx->name : v >= 0 ? ctx->s->unknown_names[v] : "?");
#undef HOW
	}
	put(buf, len, off, one, strlen(one));
}

/*
 * Render template t (of n bytes) of reasons.def: text, {placeholders} and
 * [F:...] / [!F:...] parts, which nest.
 */
static void
render_template(const RenderCtx *ctx, const char *t, size_t n, char *buf, size_t len, size_t *off)
{
	size_t		i = 0;

	while (i < n)
	{
		if (t[i] == '{')
		{
			const char *close = memchr(t + i, '}', n - i);
			size_t		k = close ? (size_t) (close - t) : n;

			render_placeholder(ctx, t + i + 1, k - i - 1, buf, len, off);
			i = k + 1;
		}
		else if (t[i] == '[')
		{
			/* the part runs to its matching ']' */
			int			depth = 0;
			size_t		k = i;
			bool		neg = t[i + 1] == '!';
			const char *f = t + i + 1 + neg;
			const char *colon;

			for (; k < n; k++)
			{
				if (t[k] == '[')
					depth++;
				else if (t[k] == ']' && --depth == 0)
					break;
			}
			colon = memchr(f, ':', t + k - f);
			if (colon && (field(ctx->x, f, colon - f) >= 0) != neg)
				render_template(ctx, colon + 1, t + k - colon - 1, buf, len, off);
			i = k + 1;
		}
		else
		{
			size_t		k = i;

			while (k < n && t[k] != '{' && t[k] != '[')
				k++;
			put(buf, len, off, t + i, k - i);
			i = k;
		}
	}
}

/* Render one reason of job into buf. */
static void
render(const TideSnapshot *s, const TideJob *job, const TideReason *x, char *buf, size_t len)
{
	RenderCtx	ctx = {s, job, x, NULL};
	size_t		off = 0;

	buf[0] = '\0';
	if (x->code <= R_NONE || x->code >= R_COUNT)
	{
		snprintf(buf, len, "reason %d", x->code);
		return;
	}
	render_template(&ctx, reason_rows[x->code].text, strlen(reason_rows[x->code].text), buf, len, &off);
}

size_t
tide_reason_unknown_text(bool gpu_type, const char *name, char *buf, size_t len)
{
	TideReason	x = {0};
	RenderCtx	ctx = {NULL, NULL, &x, name};
	const char *t = reason_rows[gpu_type ? R_NO_TYPE : R_NO_RESOURCE].text;
	size_t		off = 0;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	x.code = gpu_type ? R_NO_TYPE : R_NO_RESOURCE;
	x.role = -1;
	x.res = -1;
	render_template(&ctx, t, strlen(t), buf, len, &off);
	return off;
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
