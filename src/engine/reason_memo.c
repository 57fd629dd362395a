/*
 * reason_memo.c: pending-reason texts rendered once per distinct input.
 *
 * A cycle explains every job it leaves pending (R-C2), and most of a
 * backlog shares a handful of reasons: rendering each job's text with
 * snprintf costs more than the rest of the write preparation together
 * (0.6 us a job, 60 ms at 100k jobs).  The text of a job depends only on
 * its outcome's reasons, the requests of the roles they name and its node
 * selector (render() in reasons.c), so jobs with equal inputs share one
 * rendering.  Distinct texts are numbered, so that callers can group jobs
 * by reason with integer compares.
 *
 * Plain C, no PostgreSQL headers; memory comes from the snapshot's
 * allocator and goes with it.
 */
#include <string.h>

#include "engine.h"
#include "hash.h"

#define KEY_CHUNK_WORDS 65536

typedef struct MemoEntry
{
	uint64_t	hash;
	const int64_t *key;			/* NULL: empty slot */
	int32_t		len;			/* words */
	int32_t		text_id;
} MemoEntry;

typedef struct TextEntry
{
	uint64_t	hash;
	int32_t		text_id;		/* -1: empty slot */
} TextEntry;

struct TideReasonMemo
{
	TideSnapshot *s;
	const TideResult *r;
	MemoEntry  *entries;
	int32_t		cap;			/* power of two */
	int32_t		used;
	TextEntry  *texts_by_hash;
	int32_t		text_cap;		/* power of two */
	const char **texts;			/* [ntexts] */
	int32_t		ntexts;
	int32_t		texts_alloc;
	int64_t    *chunk;			/* key storage */
	int32_t		chunk_used;
	int64_t    *scratch;		/* one key being built */
	int32_t		scratch_words;
	uint64_t   *mult;			/* [scratch_words] odd multipliers, hash_words */
	char	   *buf;			/* one text being rendered */
};

#define TEXT_MAX 1024

/*
 * The most words of a key (build_key) with a node selector of nselector
 * labels: nreasons, per reason 7 fields + a marker + a request,
 * nselector, the selector.
 */
#define KEY_WORDS(s, nselector) (1 + TIDE_MAX_REASONS * (8 + (s)->nres) + 1 + (nselector))

/*
 * A key's hash: the sum of its words each times a multiplier of its own
 * position (m->mult), then mixed (high bits folded into the low ones:
 * milli quantities end in zero bits).  The multiplies do not wait for each
 * other, where tide_hash_mix() folds one word after the other: a cycle
 * hashes every pending job's key (about 30 words), and that chain was
 * three quarters of the memo's time.  Keys are compared whole on a match,
 * so the hash only spreads them.
 */
static uint64_t
hash_words(const TideReasonMemo *m, int n)
{
	const int64_t *w = m->scratch;
	uint64_t	h0 = (uint64_t) n,
				h1 = 0;
	int			i = 0;

	for (; i + 1 < n; i += 2)
	{
		h0 += (uint64_t) w[i] * m->mult[i];
		h1 += (uint64_t) w[i + 1] * m->mult[i + 1];
	}
	if (i < n)
		h0 += (uint64_t) w[i] * m->mult[i];
	h0 = tide_hash_mix(h0 ^ (h0 >> 29), h1 ^ (h1 >> 29));
	return h0 ^ (h0 >> 33);		/* slots take the low bits */
}

/*
 * Room for keys of up to words words (more than there is): the scratch key
 * and its multipliers (the same ones every time: they depend only on the
 * position).
 */
static void
reserve_words(TideReasonMemo *m, int words)
{
	words = words < 2 * m->scratch_words ? 2 * m->scratch_words : words;
	m->scratch = tide_alloc(m->s, sizeof(int64_t) * words);
	m->mult = tide_alloc(m->s, sizeof(uint64_t) * words);
	for (int i = 0; i < words; i++)
		m->mult[i] = tide_hash_mix((uint64_t) i, 0x5851f42d4c957f2dULL) | 1;
	m->scratch_words = words;
}

TideReasonMemo *
tide_reason_memo_create(TideSnapshot *s, const TideResult *r)
{
	TideReasonMemo *m = tide_alloc(s, sizeof(TideReasonMemo));

	m->s = s;
	m->r = r;
	m->cap = 1024;
	m->entries = tide_alloc(s, sizeof(MemoEntry) * m->cap);
	m->text_cap = 1024;
	m->texts_by_hash = tide_alloc(s, sizeof(TextEntry) * m->text_cap);
	for (int i = 0; i < m->text_cap; i++)
		m->texts_by_hash[i].text_id = -1;
	m->texts_alloc = 256;
	m->texts = tide_alloc(s, sizeof(char *) * m->texts_alloc);
	/* grown by the first job with a longer node selector (reserve_words) */
	reserve_words(m, KEY_WORDS(s, 4));
	m->buf = tide_alloc(s, TEXT_MAX);
	return m;
}

/* The inputs of job j's text, into m->scratch; returns the word count. */
static int
build_key(TideReasonMemo *m, int j)
{
	const TideSnapshot *s = m->s;
	const TideJob *job = &s->jobs[j];
	const TideOutcome *o = &m->r->outcomes[j];
	int64_t    *k = m->scratch;
	int			n = 0;

	k[n++] = o->nreasons;
	for (int i = 0; i < o->nreasons; i++)
	{
		const TideReason *x = &tide_outcome_reasons(m->r, o)[i];

		k[n++] = x->code;
		k[n++] = x->res;
		k[n++] = x->role;
		k[n++] = x->a;
		k[n++] = x->b;
		k[n++] = x->c;
		k[n++] = x->ref;
		if (x->role >= 0 && x->role < job->nroles)
		{
			k[n++] = 1;
			memcpy(&k[n], job->roles[x->role].request, sizeof(int64_t) * s->nres);
			n += s->nres;
		}
		else
			k[n++] = 0;
	}
	k[n++] = job->nselector;
	for (int i = 0; i < job->nselector; i++)
		k[n++] = job->selector[i];
	return n;
}

static const int64_t *
store_key(TideReasonMemo *m, int n)
{
	int64_t    *dst;

	if (m->chunk == NULL || m->chunk_used + n > KEY_CHUNK_WORDS)
	{
		int			words = n > KEY_CHUNK_WORDS ? n : KEY_CHUNK_WORDS;

		m->chunk = tide_alloc(m->s, sizeof(int64_t) * words);
		m->chunk_used = 0;
	}
	dst = m->chunk + m->chunk_used;
	memcpy(dst, m->scratch, sizeof(int64_t) * n);
	m->chunk_used += n;
	return dst;
}

static void
grow_entries(TideReasonMemo *m)
{
	int32_t		cap = m->cap * 2;
	MemoEntry  *e = tide_alloc(m->s, sizeof(MemoEntry) * cap);

	for (int i = 0; i < m->cap; i++)
	{
		uint32_t	slot;

		if (m->entries[i].key == NULL)
			continue;
		slot = (uint32_t) m->entries[i].hash & (cap - 1);
		while (e[slot].key != NULL)
			slot = (slot + 1) & (cap - 1);
		e[slot] = m->entries[i];
	}
	m->entries = e;
	m->cap = cap;
}

static void
grow_texts(TideReasonMemo *m)
{
	int32_t		cap = m->text_cap * 2;
	TextEntry  *e = tide_alloc(m->s, sizeof(TextEntry) * cap);

	for (int i = 0; i < cap; i++)
		e[i].text_id = -1;
	for (int i = 0; i < m->text_cap; i++)
	{
		uint32_t	slot;

		if (m->texts_by_hash[i].text_id < 0)
			continue;
		slot = (uint32_t) m->texts_by_hash[i].hash & (cap - 1);
		while (e[slot].text_id >= 0)
			slot = (slot + 1) & (cap - 1);
		e[slot] = m->texts_by_hash[i];
	}
	m->texts_by_hash = e;
	m->text_cap = cap;
}

/* The id of text t (rendered into m->buf), a new one if never seen. */
static int32_t
intern_text(TideReasonMemo *m, const char *t)
{
	uint64_t	h = tide_hash_bytes(t, strlen(t), TIDE_HASH_BASIS);
	uint32_t	slot;
	size_t		len;
	char	   *copy;

	if ((m->ntexts + 1) * 2 > m->text_cap)
		grow_texts(m);
	slot = (uint32_t) h & (m->text_cap - 1);
	while (m->texts_by_hash[slot].text_id >= 0)
	{
		TextEntry  *e = &m->texts_by_hash[slot];

		if (e->hash == h && strcmp(m->texts[e->text_id], t) == 0)
			return e->text_id;
		slot = (slot + 1) & (m->text_cap - 1);
	}
	if (m->ntexts == m->texts_alloc)
	{
		const char **more = tide_alloc(m->s, sizeof(char *) * m->texts_alloc * 2);

		memcpy(more, m->texts, sizeof(char *) * m->ntexts);
		m->texts = more;
		m->texts_alloc *= 2;
	}
	len = strlen(t);
	copy = tide_alloc(m->s, len + 1);
	memcpy(copy, t, len + 1);
	m->texts[m->ntexts] = copy;
	m->texts_by_hash[slot].hash = h;
	m->texts_by_hash[slot].text_id = m->ntexts;
	return m->ntexts++;
}

const char *
tide_reason_memo_text(TideReasonMemo *m, int job, int32_t *text_id)
{
	int			n;
	uint64_t	h;
	uint32_t	slot;
	MemoEntry  *e;

	if (KEY_WORDS(m->s, m->s->jobs[job].nselector) > m->scratch_words)
		reserve_words(m, KEY_WORDS(m->s, m->s->jobs[job].nselector));
	n = build_key(m, job);
	h = hash_words(m, n);
	if ((m->used + 1) * 2 > m->cap)
		grow_entries(m);
	slot = (uint32_t) h & (m->cap - 1);
	while ((e = &m->entries[slot])->key != NULL)
	{
		if (e->hash == h && e->len == n && memcmp(e->key, m->scratch, sizeof(int64_t) * n) == 0)
		{
			*text_id = e->text_id;
			return m->texts[e->text_id];
		}
		slot = (slot + 1) & (m->cap - 1);
	}
	tide_reason_text(m->s, m->r, job, m->buf, TEXT_MAX);
	e->text_id = intern_text(m, m->buf);
	e->key = store_key(m, n);
	e->len = n;
	e->hash = h;
	m->used++;
	*text_id = e->text_id;
	return m->texts[e->text_id];
}
