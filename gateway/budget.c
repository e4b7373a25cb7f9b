/*-------------------------------------------------------------------------
 *
 * budget.c
 *	  The memory budget of tablestore-gateway: the bytes of request and
 *	  response bodies that all connections together may hold
 *	  (--memory-budget), and each client address's share of it.
 *
 * conn.c charges a body as it arrives and a response until libmicrohttpd
 * lets go of it; a query charges its page before it runs (entities.c).
 * The accounting is here, below both, so that neither calls the other.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"

#include "config.h"
#include "reqtypes.h"

/*
 * A client address and what its connections hold of the memory budget:
 * one address may hold at most a quarter of it (ADDR_SHARE), so that one
 * client, whatever its credentials, cannot take the budget from all
 * others.  A slot lives while the address has a connection or a charge.
 */
struct AddrSlot
{
	char		ip[64];
	int			conns;
	size_t		charged;
	bool		used;
};

#define ADDR_SHARE(budget)	((budget) / 4)

static atomic_size_t mem_used;

static pthread_mutex_t addrs_lock = PTHREAD_MUTEX_INITIALIZER;
static AddrSlot *addrs;			/* max_connections slots */

/*
 * budget_init: the address slots, one per connection the daemon allows;
 * false if there is no memory for them.
 */
bool
budget_init(void)
{
	addrs = calloc(gw_config.max_connections, sizeof(AddrSlot));
	return addrs != NULL;
}

/*
 * mem_reserve: charge n bytes to the memory budget.  With may_refuse, a
 * charge that would take the budget over is not made and false returned;
 * without, it is made regardless (for what must be sent anyway).
 */
bool
mem_reserve(size_t n, bool may_refuse)
{
	size_t		after = atomic_fetch_add(&mem_used, n) + n;

	if (may_refuse && after > gw_config.memory_budget)
	{
		atomic_fetch_sub(&mem_used, n);
		return false;
	}
	return true;
}

/* mem_release: give back what mem_reserve charged. */
void
mem_release(size_t n)
{
	atomic_fetch_sub(&mem_used, n);
}

/*
 * addr_charge: charge n bytes to an address's share (and the budget); with
 * may_refuse, false when either would go over.  addr may be NULL.
 */
bool
addr_charge(AddrSlot *addr, size_t n, bool may_refuse)
{
	bool		ok = true;

	if (addr != NULL)
	{
		pthread_mutex_lock(&addrs_lock);
		if (may_refuse && addr->charged + n > ADDR_SHARE(gw_config.memory_budget))
			ok = false;
		else
			addr->charged += n;
		pthread_mutex_unlock(&addrs_lock);
	}
	if (ok && !mem_reserve(n, may_refuse))
	{
		if (addr != NULL)
		{
			pthread_mutex_lock(&addrs_lock);
			addr->charged -= n;
			pthread_mutex_unlock(&addrs_lock);
		}
		ok = false;
	}
	return ok;
}

/* addr_release: give back what addr_charge charged; free an unused slot. */
void
addr_release(AddrSlot *addr, size_t n)
{
	mem_release(n);
	if (addr == NULL)
		return;
	pthread_mutex_lock(&addrs_lock);
	addr->charged -= n;
	if (addr->conns == 0 && addr->charged == 0)
		addr->used = false;
	pthread_mutex_unlock(&addrs_lock);
}

/* addr_join: the slot of a new connection's address (NULL if none free). */
AddrSlot *
addr_join(const char *ip)
{
	AddrSlot   *slot = NULL;

	pthread_mutex_lock(&addrs_lock);
	for (int i = 0; i < gw_config.max_connections; i++)
	{
		if (addrs[i].used && strcmp(addrs[i].ip, ip) == 0)
		{
			slot = &addrs[i];
			break;
		}
		if (!addrs[i].used && slot == NULL)
			slot = &addrs[i];
	}
	if (slot != NULL)
	{
		if (!slot->used)
		{
			memset(slot, 0, sizeof(*slot));
			snprintf(slot->ip, sizeof(slot->ip), "%s", ip);
			slot->used = true;
		}
		slot->conns++;
	}
	pthread_mutex_unlock(&addrs_lock);
	return slot;
}

/* addr_leave: a connection of the address closed. */
void
addr_leave(AddrSlot *addr)
{
	if (addr == NULL)
		return;
	pthread_mutex_lock(&addrs_lock);
	addr->conns--;
	if (addr->conns == 0 && addr->charged == 0)
		addr->used = false;
	pthread_mutex_unlock(&addrs_lock);
}

/*
 * req_charge, req_release: charge a request's memory (a query page before
 * it is read) to the budget and its address's share.
 */
bool
req_charge(Req *r, size_t n)
{
	return addr_charge(r->addr, n, true);
}

/* req_release: see req_charge. */
void
req_release(Req *r, size_t n)
{
	addr_release(r->addr, n);
}
