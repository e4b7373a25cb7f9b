/*-------------------------------------------------------------------------
 *
 * main.c
 *	  tablestore-gateway: options, accounts, the libmicrohttpd daemon and
 *	  the life cycle of a request (headers, bounded body, response with the
 *	  service's standard headers).
 *
 * Usage: tablestore-gateway [options]; see usage() or the README section
 * "HTTP gateway (Azure SDKs)".  Without --account or --accounts-file the
 * gateway serves the development account devstoreaccount1 with its
 * published key, and then refuses to listen on anything but loopback.
 *
 *-------------------------------------------------------------------------
 */
#include "gateway.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define DEV_ACCOUNT "devstoreaccount1"
#define DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

GwConfig	gw_config = {
	.listen_addr = "127.0.0.1",
	.port = 10002,
	.conninfo = "",
	.pool_size = 8,
	.threads = 8,
	.pool_wait_ms = 5000,
	.conn_timeout = 30,
	.max_connections = 512,
	.statement_timeout_ms = 30000,
};

/* find_account: the configured account of that name, or NULL. */
Account *
find_account(const char *name, size_t len)
{
	for (int i = 0; i < gw_config.naccounts; i++)
		if (strlen(gw_config.accounts[i].name) == len &&
			strncmp(gw_config.accounts[i].name, name, len) == 0)
			return &gw_config.accounts[i];
	return NULL;
}

/* add_account: configure an account; false if its key is not base64. */
static bool
add_account(const char *name, const char *key, const char *role)
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
	gw_config.naccounts++;
	return true;
}

/* account_spec: "name:key[:role]" from --account. */
static bool
account_spec(const char *spec)
{
	char	   *s = xstrdup(spec);
	char	   *k = strchr(s, ':');
	char	   *role;
	bool		ok;

	if (k == NULL)
	{
		fprintf(stderr, "tablestore-gateway: --account takes name:key[:role]\n");
		free(s);
		return false;
	}
	*k++ = '\0';
	role = strchr(k, ':');
	if (role)
		*role++ = '\0';
	ok = add_account(s, k, role);
	free(s);
	return ok;
}

/* accounts_file: lines "name key [role]"; '#' starts a comment. */
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
		if (key == NULL || strtok_r(NULL, " \t\r\n", &save) != NULL || !add_account(name, key, role))
		{
			fprintf(stderr, "%s:%d: expected \"name key [role]\"\n", path, lineno);
			fclose(f);
			return false;
		}
	}
	fclose(f);
	return true;
}

/*
 * on_uri: libmicrohttpd hands us the request URI exactly as sent, before
 * any decoding; Shared Key signs that form, so keep it.  The returned
 * context lives until on_completed.
 */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *con)
{
	Req		   *r = calloc(1, sizeof(Req));

	if (r != NULL)
		r->raw_uri = xstrdup(uri);
	return r;
}

/* on_completed: free a request's context, whatever its end. */
static void
on_completed(void *cls, struct MHD_Connection *con, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	Req		   *r = *req_cls;

	if (r == NULL)
		return;
	free(r->raw_uri);
	buf_free(&r->body);
	free(r->raw_path);
	free(r->rest);
	free(r->base);
	for (int i = 0; i < r->nparams; i++)
	{
		free(r->params[i].name);
		free(r->params[i].value);
	}
	free(r);
	*req_cls = NULL;
}

/*
 * send_response: queue a response with the headers the service sends on
 * every response: x-ms-request-id, x-ms-version, the client request id
 * echoed, Cache-Control and nosniff.  (libmicrohttpd adds Date.)
 */
static enum MHD_Result
send_response(Req *r, Resp *resp)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	const char *v;

	mr = MHD_create_response_from_buffer(resp->body.len, resp->body.data, MHD_RESPMEM_MUST_COPY);
	if (mr == NULL)
		return MHD_NO;
	MHD_add_response_header(mr, "x-ms-request-id", r->request_id[0] ? r->request_id : "-");
	v = req_header(r, "x-ms-version");
	if (v == NULL || strlen(v) != 10 || strspn(v, "0123456789-") != 10)
		v = GW_VERSION;
	MHD_add_response_header(mr, "x-ms-version", v);
	v = req_header(r, "x-ms-client-request-id");
	if (v != NULL && strlen(v) <= 1024)
	{
		bool		clean = true;

		for (const unsigned char *p = (const unsigned char *) v; *p; p++)
			if (*p < 0x20 || *p >= 0x7f)
				clean = false;
		if (clean)
			MHD_add_response_header(mr, "x-ms-client-request-id", v);
	}
	MHD_add_response_header(mr, "Cache-Control", "no-cache");
	MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(mr, "Server", "tablestore-gateway");
	if (resp->ctype)
	{
		MHD_add_response_header(mr, "Content-Type", resp->ctype);
		if (strncmp(resp->ctype, "application/json", 16) == 0)
			MHD_add_response_header(mr, "DataServiceVersion", "3.0;");
	}
	for (int i = 0; i < resp->nhdr; i++)
		MHD_add_response_header(mr, resp->hname[i], resp->hval[i]);
	ret = MHD_queue_response(r->conn, resp->status ? resp->status : 500, mr);
	MHD_destroy_response(mr);
	if (gw_config.verbose)
		fprintf(stderr, "%s %s %s -> %d\n", r->client_ip ? r->client_ip : "-", r->method,
				r->raw_uri ? r->raw_uri : "", resp->status);
	return ret;
}

/* free_resp: release a response's memory. */
static void
free_resp(Resp *resp)
{
	buf_free(&resp->body);
	for (int i = 0; i < resp->nhdr; i++)
	{
		free(resp->hname[i]);
		free(resp->hval[i]);
	}
	resp->nhdr = 0;
}

/*
 * on_request: libmicrohttpd's access handler, called once with the
 * headers, then per chunk of body, then once more at the end.  The body
 * is kept up to GW_MAX_BODY; a larger one is discarded as it arrives and
 * answered 413 (at once when Content-Length already says so).
 */
static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
		   const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	Req		   *r = *req_cls;
	Resp		resp = {0};
	enum MHD_Result ret;

	if (r == NULL)
		return MHD_NO;
	r->conn = conn;
	r->method = method;
	if (!r->dispatched)
	{
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		r->dispatched = true;
		r->client_ip = "";
		if (ci && ci->client_addr)
		{
			if (ci->client_addr->sa_family == AF_INET)
				inet_ntop(AF_INET, &((struct sockaddr_in *) ci->client_addr)->sin_addr, r->ipbuf, sizeof(r->ipbuf));
			else if (ci->client_addr->sa_family == AF_INET6)
				inet_ntop(AF_INET6, &((struct sockaddr_in6 *) ci->client_addr)->sin6_addr, r->ipbuf, sizeof(r->ipbuf));
			r->client_ip = r->ipbuf;
		}
		if (cl != NULL && strtoull(cl, NULL, 10) > GW_MAX_BODY)
		{
			new_uuid(r->request_id);
			r->too_large = true;
			resp_error(r, &resp, 413, "RequestBodyTooLarge",
					   "The request body is too large and exceeds the maximum permissible limit.", "at most 4 MiB");
			ret = send_response(r, &resp);
			free_resp(&resp);
			return ret;
		}
		return MHD_YES;
	}
	if (*upload_data_size != 0)
	{
		if (!r->too_large)
		{
			if (r->body.len + *upload_data_size > GW_MAX_BODY)
			{
				r->too_large = true;
				buf_free(&r->body);
			}
			else
				buf_append(&r->body, upload_data, *upload_data_size);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (r->too_large)
	{
		if (r->request_id[0])
			return MHD_YES;		/* already answered */
		new_uuid(r->request_id);
		resp_error(r, &resp, 413, "RequestBodyTooLarge",
				   "The request body is too large and exceeds the maximum permissible limit.", "at most 4 MiB");
	}
	else
	{
		if (r->body.data == NULL)
			buf_append(&r->body, "", 0);
		handle_request(r, &resp);
	}
	ret = send_response(r, &resp);
	free_resp(&resp);
	return ret;
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
		   "  --account NAME:KEY[:ROLE]  an account, its base64 key and the PostgreSQL role it acts as\n"
		   "  --accounts-file FILE     accounts, one \"name key [role]\" per line\n"
		   "  --dev-account            also serve devstoreaccount1 (the default when no account is given)\n"
		   "  --pool N                 database connections (default 8)\n"
		   "  --threads N              HTTP threads (default 8; a thread waits while its request is in the database)\n"
		   "  --pool-wait-ms N         how long a request waits for a connection before 503 (default 5000)\n"
		   "  --timeout S              idle seconds before a client connection is closed (default 30)\n"
		   "  --max-connections N      concurrent client connections (default 512)\n"
		   "  --statement-timeout-ms N limit of one database call (default 30000)\n"
		   "  --tls-cert FILE, --tls-key FILE  serve HTTPS with this PEM certificate (chain) and key\n"
		   "  -v, --verbose            log every request to stderr\n");
}

/* is_loopback: whether an address is 127.0.0.0/8 or ::1. */
static bool
is_loopback(const char *addr)
{
	return strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0 || strcmp(addr, "localhost") == 0;
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
		{"statement-timeout-ms", required_argument, NULL, 's'},
		{"tls-cert", required_argument, NULL, 'C'},
		{"tls-key", required_argument, NULL, 'K'},
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
			case 's':
				gw_config.statement_timeout_ms = atoi(optarg);
				break;
			case 'C':
				tls_cert = optarg;
				break;
			case 'K':
				tls_key = optarg;
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
		gw_config.statement_timeout_ms < 0)
	{
		usage();
		return 2;
	}
	if ((gw_config.naccounts == 0 || dev) && !find_account(DEV_ACCOUNT, strlen(DEV_ACCOUNT)))
	{
		if (!is_loopback(gw_config.listen_addr))
		{
			fprintf(stderr, "tablestore-gateway: the development account's key is public; "
					"configure accounts with --account to listen on %s\n", gw_config.listen_addr);
			return 2;
		}
		add_account(DEV_ACCOUNT, DEV_KEY, NULL);
	}

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

	signal(SIGPIPE, SIG_IGN);
	if (!db_init())
		return 1;

	/* the daemon's threads inherit this mask: signals come to sigwait */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	d = MHD_start_daemon(flags, (uint16_t) gw_config.port, NULL, NULL, &on_request, NULL,
						 MHD_OPTION_SOCK_ADDR, sa,
						 MHD_OPTION_THREAD_POOL_SIZE, (unsigned int) gw_config.threads,
						 MHD_OPTION_CONNECTION_LIMIT, (unsigned int) gw_config.max_connections,
						 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) gw_config.conn_timeout,
						 /* request line and headers: 64 KiB per connection */
						 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) (64 * 1024),
						 MHD_OPTION_URI_LOG_CALLBACK, &on_uri, NULL,
						 MHD_OPTION_NOTIFY_COMPLETED, &on_completed, NULL,
						 MHD_OPTION_ARRAY, tls_opts,
						 MHD_OPTION_END);
	if (d == NULL)
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
	if (port_file)
	{
		FILE	   *f = fopen(port_file, "w");

		if (f == NULL)
		{
			perror(port_file);
			MHD_stop_daemon(d);
			return 1;
		}
		fprintf(f, "%d\n", gw_config.port);
		fclose(f);
	}
	while (sigwait(&sigs, &sig) == 0)
		if (sig == SIGINT || sig == SIGTERM)
			break;
	MHD_stop_daemon(d);
	free(cert_pem);
	free(key_pem);
	fprintf(stderr, "tablestore-gateway: stopped\n");
	return 0;
}
