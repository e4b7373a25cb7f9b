/*-------------------------------------------------------------------------
 *
 * main.c
 *	  tablestore-gateway: options, accounts and start-up.  The life of
 *	  connections and requests is conn.c's.
 *
 * Usage: tablestore-gateway [options]; see usage() or the README section
 * "HTTP gateway (Azure SDKs)".  Without --account or --accounts-file the
 * gateway serves the development account devstoreaccount1 with its
 * published key.  That key is public: whatever way an account is given
 * it (default, --dev-account, --account, --accounts-file), the gateway
 * refuses to listen on anything but loopback.
 *
 * The gateway is a separate process: libmicrohttpd parses HTTP, OpenSSL
 * computes HMACs and base64, json-c reads and writes JSON, and libpq calls
 * the extension's SQL functions, always as prepared statements with the
 * request's values as parameters.  Each component (a .c file) declares
 * what it offers in a header of its own name, and each .c includes the
 * headers of what it uses; reqtypes.h holds the request and response every
 * handler works on, gwlimits.h the limits enforced before anything reaches
 * the database, config.h this file's configuration.
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "account.h"
#include "buf.h"
#include "config.h"
#include "conn.h"
#include "db.h"
#include "encode.h"
#include "oauth.h"

#define DEV_ACCOUNT "devstoreaccount1"
#define DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

GwConfig	gw_config = {
	.listen_addr = "127.0.0.1",
	.port = 10002,
	.conninfo = "",
	.pool_size = 8,
	.secondary_pool_size = -1,	/* --pool's */
	.threads = 8,
	.pool_wait_ms = 5000,
	.conn_timeout = 30,
	.header_timeout = 10,
	.request_timeout = 60,
	.max_connections = 512,
	.max_per_ip = 64,
	.memory_budget = (size_t) 256 * 1024 * 1024,
	.statement_timeout_ms = 30000,
	.db_timeout_ms = -1,		/* --statement-timeout-ms's + 5000 */
};

/*
 * add_account: configure an account; false if its name or key is not
 * valid.  database NULL means the database of --db.
 */
static bool
add_account(const char *name, const char *key, const char *role, const char *database)
{
	Account    *a;

	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
		{
			fprintf(stderr, "tablestore-gateway: account name \"%s\" must be lower-case letters and digits\n", name);
			return false;
		}
	if (*name == '\0' || find_account(name, strlen(name)))
	{
		fprintf(stderr, "tablestore-gateway: account name \"%s\" is empty or given twice\n", name);
		return false;
	}
	gw_config.accounts = realloc(gw_config.accounts, sizeof(Account) * (gw_config.naccounts + 1));
	if (gw_config.accounts == NULL)
		return false;
	a = &gw_config.accounts[gw_config.naccounts];
	memset(a, 0, sizeof(*a));
	a->keylen = b64_decode(key, a->key, sizeof(a->key));
	if (a->keylen <= 0)
	{
		fprintf(stderr, "tablestore-gateway: the key of account \"%s\" is not base64 (at most 128 bytes)\n", name);
		return false;
	}
	a->name = xstrdup(name);
	a->role = (role && *role) ? xstrdup(role) : NULL;
	a->database = (database && *database) ? xstrdup(database) : NULL;
	gw_config.naccounts++;
	return true;
}

/* account_spec: "name:key[:role[:database]]" from --account. */
static bool
account_spec(const char *spec)
{
	char	   *s = xstrdup(spec);
	char	   *k = strchr(s, ':');
	char	   *role;
	char	   *database = NULL;
	bool		ok;

	if (k == NULL)
	{
		fprintf(stderr, "tablestore-gateway: --account takes name:key[:role[:database]]\n");
		free(s);
		return false;
	}
	*k++ = '\0';
	role = strchr(k, ':');
	if (role)
	{
		*role++ = '\0';
		database = strchr(role, ':');
		if (database)
			*database++ = '\0';
	}
	ok = add_account(s, k, role, database);
	free(s);
	return ok;
}

/* accounts_file: lines "name key [role [database]]"; '#' starts a comment. */
static bool
accounts_file(const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[1024];
	int			lineno = 0;

	if (f == NULL)
	{
		perror(path);
		return false;
	}
	while (fgets(line, sizeof(line), f))
	{
		char	   *name,
				   *key,
				   *role,
				   *database,
				   *save;
		char	   *hash = strchr(line, '#');

		lineno++;
		if (hash)
			*hash = '\0';
		name = strtok_r(line, " \t\r\n", &save);
		if (name == NULL)
			continue;
		key = strtok_r(NULL, " \t\r\n", &save);
		role = strtok_r(NULL, " \t\r\n", &save);
		database = role ? strtok_r(NULL, " \t\r\n", &save) : NULL;
		if (key == NULL || (database && strtok_r(NULL, " \t\r\n", &save) != NULL) ||
			!add_account(name, key, role, database))
		{
			fprintf(stderr, "%s:%d: expected \"name key [role [database]]\"\n", path, lineno);
			fclose(f);
			return false;
		}
	}
	fclose(f);
	return true;
}

/* read_file: a whole (small) file, NUL-terminated, or NULL. */
static char *
read_file(const char *path)
{
	FILE	   *f = fopen(path, "r");
	Buf			b = {0};
	char		chunk[4096];
	size_t		n;

	if (f == NULL)
	{
		perror(path);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < 1024 * 1024)
		buf_append(&b, chunk, n);
	fclose(f);
	if (b.data == NULL)
		buf_append(&b, "", 0);
	return b.data;
}

static void
usage(void)
{
	printf("tablestore-gateway: the Azure Table service REST protocol, served by the tablestore extension\n\n"
		   "  --db CONNINFO            libpq connection string of the database (default: libpq's environment)\n"
		   "  --listen ADDR            IPv4 or IPv6 address to listen on (default 127.0.0.1)\n"
		   "  --port N                 TCP port (default 10002; 0 picks a free one)\n"
		   "  --port-file FILE         write the port listened on to FILE\n"
		   "  --account NAME:KEY[:ROLE[:DATABASE]]  an account, its base64 key, the PostgreSQL role it acts as\n"
		   "                           and its database (default: --db's; no two accounts share one)\n"
		   "  --accounts-file FILE     accounts, one \"name key [role [database]]\" per line\n"
		   "  --dev-account            also serve devstoreaccount1 (the default when no account is given)\n"
		   "  --pool N                 database connections (default 8)\n"
		   "  --secondary-db CONNINFO  libpq connection string of a hot standby of --db's server: every read at\n"
		   "                           <account>-secondary runs there (default: none, the secondary reads --db's)\n"
		   "  --secondary-pool N       connections to the standby (default: --pool's, at most half of --threads)\n"
		   "  --threads N              HTTP threads (default 8; a thread waits while its request is in the database)\n"
		   "  --pool-wait-ms N         how long a request waits for a connection before 503 (default 5000)\n"
		   "  --timeout S              idle seconds before a client connection is closed (default 30)\n"
		   "  --header-timeout S       seconds a client has to send a request's line and headers (default 10)\n"
		   "  --request-timeout S      seconds a client has to send a request's body (default 60)\n"
		   "  --max-connections N      concurrent client connections (default 512)\n"
		   "  --max-connections-per-ip N  concurrent connections of one client address (default 64)\n"
		   "  --memory-budget MIB      request and response bodies held at once, in MiB (default 256)\n"
		   "  --statement-timeout-ms N limit of one database call (default 30000)\n"
		   "  --db-timeout-ms N        the gateway's own deadline for a database call or connection attempt: a\n"
		   "                           server that does not answer by then is dropped, 503 (default: the\n"
		   "                           statement timeout + 5000)\n"
		   "  --tls-cert FILE, --tls-key FILE  serve HTTPS with this PEM certificate (chain) and key\n"
		   "  --oauth-key FILE         trust bearer tokens (JWT, RS256/384/512) signed by the RSA key of this PEM\n"
		   "                           public key or certificate (at most 8; bearer tokens need HTTPS)\n"
		   "  --oauth-tenant TID       accept the tokens of this Microsoft Entra ID tenant (its issuers, its tid)\n"
		   "  --oauth-issuer ISS       accept tokens whose iss is exactly ISS (--oauth-key needs one of the two)\n"
		   "  --oauth-principal ACCOUNT:OID[:ROLE]  the token principal (oid claim, or * for any that has one)\n"
		   "                           that may act on ACCOUNT, as ROLE (default: the account's role); repeatable\n"
		   "  --oauth-audience AUD     accept this aud too, besides Azure Storage and the account's endpoints\n"
		   "  -v, --verbose            log every request to stderr\n");
}

/*
 * is_loopback: whether a --listen address is 127.0.0.0/8 or ::1 (parsed:
 * "127.0.0.1.evil" and "::ffff:1.2.3.4" are not).
 */
static bool
is_loopback(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcmp(addr, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, addr, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, addr, &a6) == 1)
		return memcmp(&a6, &in6addr_loopback, sizeof(a6)) == 0;
	return false;
}

/*
 * published_key_exposed: whether an account has the development key (the
 * key everybody knows) while the listener is not loopback.
 */
static bool
published_key_exposed(void)
{
	unsigned char dev[128];
	int			devlen = b64_decode(DEV_KEY, dev, sizeof(dev));

	if (is_loopback(gw_config.listen_addr))
		return false;
	for (int i = 0; i < gw_config.naccounts; i++)
	{
		Account    *a = &gw_config.accounts[i];

		if (a->keylen == devlen && CRYPTO_memcmp(a->key, dev, devlen) == 0)
		{
			fprintf(stderr, "tablestore-gateway: account \"%s\" has the development account's key, which is public; "
					"give it a key of its own to listen on %s\n", a->name, gw_config.listen_addr);
			return true;
		}
	}
	return false;
}

/* positive: a numeric option's value, or -1 if it is not a plain number. */
static long
positive(const char *v)
{
	char	   *end;
	long		n;

	if (v == NULL || *v < '0' || *v > '9')
		return -1;
	n = strtol(v, &end, 10);
	return *end == '\0' ? n : -1;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, 'd'},
		{"listen", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'p'},
		{"port-file", required_argument, NULL, 'P'},
		{"account", required_argument, NULL, 'a'},
		{"accounts-file", required_argument, NULL, 'A'},
		{"dev-account", no_argument, NULL, 'D'},
		{"pool", required_argument, NULL, 'n'},
		{"threads", required_argument, NULL, 't'},
		{"pool-wait-ms", required_argument, NULL, 'w'},
		{"timeout", required_argument, NULL, 'T'},
		{"max-connections", required_argument, NULL, 'm'},
		{"max-connections-per-ip", required_argument, NULL, 'I'},
		{"header-timeout", required_argument, NULL, 'H'},
		{"request-timeout", required_argument, NULL, 'R'},
		{"memory-budget", required_argument, NULL, 'B'},
		{"statement-timeout-ms", required_argument, NULL, 's'},
		{"tls-cert", required_argument, NULL, 'C'},
		{"tls-key", required_argument, NULL, 'K'},
		{"oauth-key", required_argument, NULL, 1001},
		{"oauth-issuer", required_argument, NULL, 1002},
		{"oauth-audience", required_argument, NULL, 1003},
		{"oauth-principal", required_argument, NULL, 1004},
		{"oauth-tenant", required_argument, NULL, 1005},
		{"secondary-db", required_argument, NULL, 1006},
		{"secondary-pool", required_argument, NULL, 1007},
		{"db-timeout-ms", required_argument, NULL, 1008},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	const char *port_file = NULL;
	const char *tls_cert = NULL;
	const char *tls_key = NULL;
	char	   *cert_pem = NULL;
	char	   *key_pem = NULL;
	struct MHD_OptionItem tls_opts[3] = {{MHD_OPTION_END, 0, NULL}};
	bool		dev = false;
	int			c;
	struct MHD_Daemon *d;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	sigset_t	sigs;
	int			sig;
	const union MHD_DaemonInfo *info;

	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				gw_config.conninfo = optarg;
				break;
			case 'l':
				gw_config.listen_addr = optarg;
				break;
			case 'p':
				gw_config.port = atoi(optarg);
				break;
			case 'P':
				port_file = optarg;
				break;
			case 'a':
				if (!account_spec(optarg))
					return 2;
				break;
			case 'A':
				if (!accounts_file(optarg))
					return 2;
				break;
			case 'D':
				dev = true;
				break;
			case 'n':
				gw_config.pool_size = atoi(optarg);
				break;
			case 't':
				gw_config.threads = atoi(optarg);
				break;
			case 'w':
				gw_config.pool_wait_ms = atoi(optarg);
				break;
			case 'T':
				gw_config.conn_timeout = atoi(optarg);
				break;
			case 'm':
				gw_config.max_connections = atoi(optarg);
				break;
			case 'I':
				gw_config.max_per_ip = (int) positive(optarg);
				break;
			case 'H':
				gw_config.header_timeout = (int) positive(optarg);
				break;
			case 'R':
				gw_config.request_timeout = (int) positive(optarg);
				break;
			case 'B':
				{
					long		mib = positive(optarg);

					if (mib < 8 || mib > 1024 * 1024)
					{
						fprintf(stderr, "tablestore-gateway: --memory-budget is in MiB, at least 8\n");
						return 2;
					}
					gw_config.memory_budget = (size_t) mib * 1024 * 1024;
				}
				break;
			case 's':
				gw_config.statement_timeout_ms = atoi(optarg);
				break;
			case 1008:
				{
					long		ms = positive(optarg);

					if (ms < 100 || ms > 3600000)
					{
						fprintf(stderr, "tablestore-gateway: --db-timeout-ms takes 100 to 3600000\n");
						return 2;
					}
					gw_config.db_timeout_ms = (int) ms;
				}
				break;
			case 'C':
				tls_cert = optarg;
				break;
			case 'K':
				tls_key = optarg;
				break;
			case 1001:
				if (!oauth_add_key(optarg))
					return 2;
				break;
			case 1002:
				if (!oauth_add_issuer(optarg))
					return 2;
				break;
			case 1003:
				if (!oauth_add_audience(optarg))
					return 2;
				break;
			case 1004:
				if (!oauth_add_principal(optarg))
					return 2;
				break;
			case 1005:
				if (!oauth_add_tenant(optarg))
					return 2;
				break;
			case 1006:
				gw_config.secondary_conninfo = optarg;
				break;
			case 1007:
				gw_config.secondary_pool_size = (int) positive(optarg);
				if (gw_config.secondary_pool_size < 1 || gw_config.secondary_pool_size > 1000)
				{
					fprintf(stderr, "tablestore-gateway: --secondary-pool takes 1 to 1000\n");
					return 2;
				}
				break;
			case 'v':
				gw_config.verbose = true;
				break;
			case 'h':
				usage();
				return 0;
			default:
				usage();
				return 2;
		}
	}
	if (optind < argc || gw_config.port < 0 || gw_config.port > 65535 || gw_config.pool_size < 1 ||
		gw_config.pool_size > 1000 || gw_config.threads < 1 || gw_config.threads > 256 ||
		gw_config.pool_wait_ms < 0 || gw_config.conn_timeout < 1 || gw_config.max_connections < 1 ||
		gw_config.statement_timeout_ms < 0 || gw_config.header_timeout < 1 ||
		gw_config.request_timeout < 1 || gw_config.max_per_ip < 1)
	{
		usage();
		return 2;
	}
	if (gw_config.db_timeout_ms < 0)
		gw_config.db_timeout_ms = gw_config.statement_timeout_ms > 0 &&
			gw_config.statement_timeout_ms < 3600000 - 5000 ?
			gw_config.statement_timeout_ms + 5000 : 3600000;
	/*
	 * the standby's pool leaves the primary's requests HTTP threads of their
	 * own when the standby stalls: at most half of them by default
	 */
	if (gw_config.secondary_pool_size < 0)
		gw_config.secondary_pool_size = gw_config.pool_size < (gw_config.threads + 1) / 2 ?
			gw_config.pool_size : (gw_config.threads + 1) / 2;
	if ((gw_config.naccounts == 0 || dev) && !find_account(DEV_ACCOUNT, strlen(DEV_ACCOUNT)))
		add_account(DEV_ACCOUNT, DEV_KEY, NULL, NULL);
	if (published_key_exposed() || !oauth_check_config())
		return 2;

	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	if (inet_pton(AF_INET, strcmp(gw_config.listen_addr, "localhost") == 0 ? "127.0.0.1" : gw_config.listen_addr,
				  &sin.sin_addr) == 1)
	{
		sin.sin_family = AF_INET;
		sin.sin_port = htons(gw_config.port);
		sa = (struct sockaddr *) &sin;
	}
	else if (inet_pton(AF_INET6, gw_config.listen_addr, &sin6.sin6_addr) == 1)
	{
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons(gw_config.port);
		sa = (struct sockaddr *) &sin6;
		flags |= MHD_USE_IPv6;
	}
	else
	{
		fprintf(stderr, "tablestore-gateway: --listen needs a numeric address, not \"%s\"\n", gw_config.listen_addr);
		return 2;
	}

	if ((tls_cert != NULL) != (tls_key != NULL))
	{
		fprintf(stderr, "tablestore-gateway: --tls-cert and --tls-key go together\n");
		return 2;
	}
	if (tls_cert != NULL)
	{
		if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
		{
			fprintf(stderr, "tablestore-gateway: this libmicrohttpd has no TLS\n");
			return 2;
		}
		if ((cert_pem = read_file(tls_cert)) == NULL || (key_pem = read_file(tls_key)) == NULL)
			return 2;
		tls_opts[0] = (struct MHD_OptionItem) {MHD_OPTION_HTTPS_MEM_CERT, 0, cert_pem};
		tls_opts[1] = (struct MHD_OptionItem) {MHD_OPTION_HTTPS_MEM_KEY, 0, key_pem};
		tls_opts[2] = (struct MHD_OptionItem) {MHD_OPTION_END, 0, NULL};
		flags |= MHD_USE_TLS;
		gw_config.tls = true;
	}

	/*
	 * Bodies and pages (up to a few MiB) come from mmap and go back to the
	 * system when freed: glibc would otherwise raise its mmap threshold
	 * after the first such free and serve them from arenas that stay
	 * fragmented (the watchdog's malloc_trim returns what it can).
	 */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	signal(SIGPIPE, SIG_IGN);
	{
		int			rc = db_init();

		if (rc != 0)
			return rc;
	}

	/* the daemon's threads inherit this mask: signals come to sigwait */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (!conn_start(&d, flags, sa, tls_opts))
	{
		fprintf(stderr, "tablestore-gateway: cannot listen on %s port %d\n", gw_config.listen_addr, gw_config.port);
		return 1;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (info)
		gw_config.port = info->port;
	fprintf(stderr, "tablestore-gateway: listening on %s port %d (%s), %d account(s), pool of %d\n",
			gw_config.listen_addr, gw_config.port, gw_config.tls ? "https" : "http",
			gw_config.naccounts, gw_config.pool_size);
	if (gw_config.secondary_conninfo != NULL)
		fprintf(stderr, "tablestore-gateway: the secondary reads the standby of --secondary-db, pool of %d\n",
				gw_config.secondary_pool_size);
	if (port_file)
	{
		FILE	   *f = fopen(port_file, "w");

		if (f == NULL)
		{
			perror(port_file);
			conn_stop(d);
			return 1;
		}
		fprintf(f, "%d\n", gw_config.port);
		fclose(f);
	}
	while (sigwait(&sigs, &sig) == 0)
		if (sig == SIGINT || sig == SIGTERM)
			break;
	conn_stop(d);
	free(cert_pem);
	free(key_pem);
	fprintf(stderr, "tablestore-gateway: stopped\n");
	return 0;
}
