/*-------------------------------------------------------------------------
 *
 * conn.h
 *	  Connections and their deadlines (conn.c): the HTTP daemon.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TSGW_CONN_H
#define TSGW_CONN_H

#include <stdbool.h>
#include <sys/socket.h>
#include <microhttpd.h>

extern bool conn_start(struct MHD_Daemon **daemon, unsigned int flags, struct sockaddr *sa,
					   struct MHD_OptionItem *tls_opts);
extern void conn_stop(struct MHD_Daemon *daemon);

#endif							/* TSGW_CONN_H */
