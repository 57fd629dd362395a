/*
 * hash.h: the engine's hash functions and its one open-addressing scheme.
 *
 * tide_hash_mix() folds one 64-bit word into a hash: keys built from
 * integers (job shapes, eviction keys, pending-reason inputs).
 * tide_hash_bytes() is FNV-1a over bytes: label pairs and reason texts.
 * Both are deterministic (no seed), so a table's contents never depend on
 * the run; callers break ties by ids, never by slot order.
 *
 * Tables of entries (tide_table_find, tide_table_rehash): mask + 1 int32
 * slots, a power of two, each 0 (empty) or an entry's number + 1; the
 * entries live in the caller's array, the caller allocates and grows the
 * slots (doubling at half full).  Linear probing from tide_hash_slot().
 * Sets of 64-bit keys keep the key in the slot instead, 0 empty, and
 * probe the same way.
 */
#ifndef TIDE_HASH_H
#define TIDE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIDE_HASH_BASIS 14695981039346656037ULL	/* FNV-1a offset basis */

static inline uint64_t
tide_hash_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* n words folded in order by tide_hash_mix() from 0: a resource vector's hash. */
static inline uint64_t
tide_hash_vec(const int64_t *v, int n)
{
	uint64_t	h = 0;

	for (int i = 0; i < n; i++)
		h = tide_hash_mix(h, (uint64_t) v[i]);
	return h;
}

/*
 * The slot of hash h in a table of mask + 1 slots (a power of two): the
 * low bits of tide_hash_mix() depend only on the low bits of what it
 * mixed, often zero in milli quantities, so the high bits are folded in.
 */
static inline uint64_t
tide_hash_slot(uint64_t h, uint64_t mask)
{
	return (h ^ (h >> 33)) & mask;
}

/* Is entry the one looked for?  Its hash?  (ctx: the caller's entries) */
typedef bool (*TideTableSame) (const void *ctx, int32_t entry);
typedef uint64_t (*TideTableHash) (const void *ctx, int32_t entry);

/*
 * The slot holding the entry of hash h that same() accepts, else the
 * empty slot where that entry goes.  The table must have an empty slot.
 */
static inline uint64_t
tide_table_find(const int32_t *slot, uint64_t mask, uint64_t h, TideTableSame same,
				const void *ctx)
{
	uint64_t	k = tide_hash_slot(h, mask);

	while (slot[k] && !same(ctx, slot[k] - 1))
		k = (k + 1) & mask;
	return k;
}

/* The entries of old (nold slots) into slot (mask + 1 slots, zeroed), by hash(). */
static inline void
tide_table_rehash(int32_t *slot, uint64_t mask, const int32_t *old, uint64_t nold,
				  TideTableHash hash, const void *ctx)
{
	for (uint64_t i = 0; i < nold; i++)
		if (old[i])
		{
			uint64_t	k = tide_hash_slot(hash(ctx, old[i] - 1), mask);

			while (slot[k])
				k = (k + 1) & mask;
			slot[k] = old[i];
		}
}

static inline uint64_t
tide_hash_bytes(const void *p, size_t len, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
	{
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

#endif							/* TIDE_HASH_H */
