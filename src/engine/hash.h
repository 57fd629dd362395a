/*
 * hash.h: the engine's two hash helpers, for its open-addressing tables.
 *
 * tide_hash_mix() folds one 64-bit word into a hash: keys built from
 * integers (job shapes, eviction keys, pending-reason inputs).
 * tide_hash_bytes() is FNV-1a over bytes: label pairs and reason texts.
 * Both are deterministic (no seed), so a table's contents never depend on
 * the run; callers break ties by ids, never by slot order.
 */
#ifndef TIDE_HASH_H
#define TIDE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define TIDE_HASH_BASIS 14695981039346656037ULL	/* FNV-1a offset basis */

static inline uint64_t
tide_hash_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
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
