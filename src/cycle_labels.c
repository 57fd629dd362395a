/*
 * cycle_labels.c: labels read from jsonb into the snapshot's label ids, for
 * the load's nodes and jobs and the workload shapes (see cycle_labels.h).
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/varlena.h"

#include "cycle_labels.h"

/* A label: key and value as jsonb_each_text() gives them. */
typedef struct Label
{
	char	   *key;
	int			keylen;
	char	   *value;
} Label;

/* The text of a jsonb value as jsonb_each_text() gives it; NULL for null. */
static char *
value_text(JsonbValue *v)
{
	if (v->type == jbvNull)
		return NULL;
	if (v->type == jbvString)
		return pnstrdup(v->val.string.val, v->val.string.len);
	return JsonbToCString(NULL, &JsonbValueToJsonb(v)->root, 0);
}

int32 *
cycle_label_ids(TideSnapshot *s, MemoryContext mcxt, Datum d, int32 *n)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(d);
	Jsonb	   *jb;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	Label	   *labels;
	int			nl = 0;
	char	   *key = NULL;
	int			keylen = 0;
	int32	   *ids;

	*n = 0;
	/* '{}' as stored: a root container header and nothing else */
	if (!VARATT_IS_EXTERNAL(raw) && !VARATT_IS_COMPRESSED(raw) &&
		VARSIZE_ANY_EXHDR(raw) <= sizeof(uint32))
		return NULL;
	jb = DatumGetJsonbP(d);
	if (!JB_ROOT_IS_OBJECT(jb) || JB_ROOT_COUNT(jb) == 0)
		return NULL;
	labels = palloc(sizeof(Label) * JB_ROOT_COUNT(jb));
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			key = v.val.string.val;
			keylen = v.val.string.len;
		}
		else if (tok == WJB_VALUE && key != NULL && v.type != jbvNull)
		{
			Label	   *l;
			int			k;

			/* in key order, the database's collation (as ORDER BY e.key) */
			for (k = nl++; k > 0 && varstr_cmp(labels[k - 1].key, labels[k - 1].keylen, key, keylen,
												 DEFAULT_COLLATION_OID) > 0; k--)
				labels[k] = labels[k - 1];
			l = &labels[k];
			l->key = pnstrdup(key, keylen);
			l->keylen = keylen;
			l->value = value_text(&v);
		}
	}
	/* interned in that order, then sorted by id */
	ids = MemoryContextAlloc(mcxt, sizeof(int32) * (nl + 1));
	for (int i = 0; i < nl; i++)
	{
		int32		id = tide_label_intern(s, labels[i].key, labels[i].value);
		int			k;

		for (k = *n; k > 0 && ids[k - 1] > id; k--)
			ids[k] = ids[k - 1];
		ids[k] = id;
		(*n)++;
	}
	return ids;
}
