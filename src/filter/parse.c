/*-------------------------------------------------------------------------
 *
 * parse.c
 *	  Lexer and recursive-descent parser of the Table service's $filter
 *	  language, in plain C.
 *
 * Grammar (keywords in any case; "not" binds tighter than "and", which
 * binds tighter than "or"):
 *
 *	  filter	:= or_expr | (blank)
 *	  or_expr	:= and_expr ("or" and_expr)*
 *	  and_expr	:= unary ("and" unary)*
 *	  unary		:= "not" unary | primary
 *	  primary	:= "(" or_expr ")"
 *				 | operand cmp operand		(one property, one literal)
 *				 | property					(a bare Boolean property)
 *				 | "true" | "false"
 *	  cmp		:= eq | ne | gt | ge | lt | le
 *	  literal	:= 'string' | int32 | int64L | double | true | false
 *				 | datetime'...' | guid'...' | X'hex' | binary'hex'
 *
 * "not Age gt 30" reads as "not (Age gt 30)".  A bare Boolean property P is
 * parsed as "P eq true", which has the service's meaning: false when P is
 * missing or not a Boolean.  A comparison with the literal on the left is
 * turned around, so the tree always has "property op literal".
 *
 * The parser allocates through the caller's allocator and reports the
 * first error with its character position and what was expected there.
 *
 *-------------------------------------------------------------------------
 */
#include "filter.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edmtext.h"

typedef enum TokKind
{
	TOK_END,
	TOK_LPAREN,
	TOK_RPAREN,
	TOK_COMMA,
	TOK_IDENT,					/* property name or keyword */
	TOK_LITERAL,				/* any literal but true/false */
	TOK_FUNCTION				/* identifier directly followed by "(" */
} TokKind;

typedef struct Token
{
	TokKind		kind;
	size_t		start;			/* byte offset in the text */
	size_t		len;
	FilterLiteral lit;			/* TOK_LITERAL */
} Token;

typedef struct Parser
{
	const char *text;
	size_t		len;
	size_t		pos;			/* lexer position */
	Token		tok;			/* current token */
	const FilterAllocator *alloc;
	FilterError *err;
	int			ncompare;
	int			nnodes;
	int			depth;
	bool		failed;
} Parser;

/* 1-based character position of byte offset off. */
static int
char_position(const Parser *p, size_t off)
{
	int			n = 1;

	for (size_t i = 0; i < off && i < p->len; i++)
		if (((unsigned char) p->text[i] & 0xC0) != 0x80)
			n++;
	return n;
}

static bool fail(Parser *p, FilterErrorKind kind, size_t off, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

static bool
fail(Parser *p, FilterErrorKind kind, size_t off, const char *fmt,...)
{
	va_list		ap;

	if (p->failed)
		return false;
	p->failed = true;
	p->err->kind = kind;
	p->err->position = char_position(p, off);
	va_start(ap, fmt);
	vsnprintf(p->err->message, sizeof(p->err->message), fmt, ap);
	va_end(ap);
	return false;
}

static void *
palloc_node(Parser *p, size_t size)
{
	void	   *m = p->alloc->alloc(p->alloc->ctx, size);

	memset(m, 0, size);
	return m;
}

static bool
is_ident_start(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c >= 0x80;
}

static bool
is_ident_char(unsigned char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool
word_is(const Parser *p, const Token *t, const char *word)
{
	size_t		n = strlen(word);

	if (t->kind != TOK_IDENT || t->len != n)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		char		c = p->text[t->start + i];

		if (c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		if (c != word[i])
			return false;
	}
	return true;
}

/* Room for a piece of text as clip() echoes it, with its NUL; quoted. */
#define CLIP_BUFLEN		(FILTER_ECHO_LIMIT + 4)
#define DESCRIBE_BUFLEN	(CLIP_BUFLEN + 2)

/*
 * clip: n bytes of the filter's text (or of a literal's body) as an error
 * message echoes them, into buf (CLIP_BUFLEN bytes): at most
 * FILTER_ECHO_LIMIT bytes, whole UTF-8 characters, and "..." marking a
 * cut, as the server's ts_clip does.  Every echo of the caller's text goes
 * through here, so that no message grows with the input.
 */
static const char *
clip(const char *s, size_t n, char *buf)
{
	size_t		cut = n;

	if (n > FILTER_ECHO_LIMIT)
	{
		/* back up to the first byte of the character the limit splits */
		cut = FILTER_ECHO_LIMIT;
		while (cut > 0 && ((unsigned char) s[cut] & 0xC0) == 0x80)
			cut--;
	}
	memcpy(buf, s, cut);
	if (cut < n)
	{
		memcpy(buf + cut, "...", 3);
		cut += 3;
	}
	buf[cut] = '\0';
	return buf;
}

/* Describe the current token for an error message. */
static const char *
describe(const Parser *p, char *buf, size_t size)
{
	char		piece[CLIP_BUFLEN];

	if (p->tok.kind == TOK_END)
		return "end of filter";
	snprintf(buf, size, "\"%s\"", clip(p->text + p->tok.start, p->tok.len, piece));
	return buf;
}

/*
 * Lex a quoted literal body starting at the opening quote at p->pos; the
 * body (quotes doubled to escape them) is unescaped into freshly allocated
 * memory.
 */
static bool
lex_quoted(Parser *p, char **out, size_t *outlen)
{
	size_t		start = p->pos;
	char	   *buf = p->alloc->alloc(p->alloc->ctx, p->len - p->pos + 1);
	size_t		n = 0;

	p->pos++;					/* the opening quote */
	for (;;)
	{
		if (p->pos >= p->len)
			return fail(p, FERR_SYNTAX, start, "unterminated quoted literal");
		if (p->text[p->pos] == '\'')
		{
			if (p->pos + 1 < p->len && p->text[p->pos + 1] == '\'')
			{
				buf[n++] = '\'';
				p->pos += 2;
				continue;
			}
			p->pos++;
			break;
		}
		buf[n++] = p->text[p->pos++];
	}
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return true;
}

/* Lex a number: [-]digits[.digits][e[+-]digits][L] */
static bool
lex_number(Parser *p, Token *t)
{
	size_t		start = p->pos;
	size_t		i = p->pos;
	bool		is_double = false;
	char		buf[64];		/* shorter than FILTER_ECHO_LIMIT: echoed whole */
	char		piece[CLIP_BUFLEN];
	char	   *end;

	if (p->text[i] == '-')
		i++;
	if (i >= p->len || p->text[i] < '0' || p->text[i] > '9')
		return fail(p, FERR_SYNTAX, start, "expected a digit after \"-\"");
	while (i < p->len && p->text[i] >= '0' && p->text[i] <= '9')
		i++;
	if (i < p->len && p->text[i] == '.')
	{
		is_double = true;
		i++;
		if (i >= p->len || p->text[i] < '0' || p->text[i] > '9')
			return fail(p, FERR_LITERAL, start, "expected digits after the decimal point");
		while (i < p->len && p->text[i] >= '0' && p->text[i] <= '9')
			i++;
	}
	if (i < p->len && (p->text[i] == 'e' || p->text[i] == 'E'))
	{
		is_double = true;
		i++;
		if (i < p->len && (p->text[i] == '+' || p->text[i] == '-'))
			i++;
		if (i >= p->len || p->text[i] < '0' || p->text[i] > '9')
			return fail(p, FERR_LITERAL, start, "expected digits in the exponent");
		while (i < p->len && p->text[i] >= '0' && p->text[i] <= '9')
			i++;
	}
	if (i - start >= sizeof(buf))
		return fail(p, FERR_LITERAL, start, "numeric literal \"%s\" is too long",
					clip(p->text + start, i - start, piece));
	memcpy(buf, p->text + start, i - start);
	buf[i - start] = '\0';

	t->kind = TOK_LITERAL;
	errno = 0;
	if (is_double)
	{
		t->lit.type = FLIT_DOUBLE;
		t->lit.v.d = strtod(buf, &end);
		if (errno == ERANGE && isinf(t->lit.v.d))
			return fail(p, FERR_LITERAL, start, "Edm.Double literal \"%s\" is out of range", buf);
	}
	else if (i < p->len && (p->text[i] == 'L' || p->text[i] == 'l'))
	{
		i++;
		t->lit.type = FLIT_INT64;
		t->lit.v.i64 = strtoll(buf, &end, 10);
		if (errno == ERANGE)
			return fail(p, FERR_LITERAL, start, "Edm.Int64 literal \"%s\" is out of range", buf);
	}
	else
	{
		long long	v = strtoll(buf, &end, 10);

		if (errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
			return fail(p, FERR_LITERAL, start,
						"Edm.Int32 literal \"%s\" is out of range; write %sL for an Edm.Int64", buf, buf);
		t->lit.type = FLIT_INT32;
		t->lit.v.i32 = (int32_t) v;
	}
	if (i < p->len && is_ident_char((unsigned char) p->text[i]))
		return fail(p, FERR_SYNTAX, i, "unexpected character after numeric literal");
	p->pos = i;
	t->len = i - start;
	return true;
}

/* Decode hex text into bytes. */
static bool
decode_hex(Parser *p, size_t start, const char *s, size_t n, FilterLiteral *lit)
{
	char	   *b;

	if (n % 2 != 0)
		return fail(p, FERR_LITERAL, start, "binary literal needs an even number of hex digits");
	b = p->alloc->alloc(p->alloc->ctx, n / 2 + 1);
	for (size_t i = 0; i < n; i += 2)
	{
		int			hi = edm_hexval(s[i]);
		int			lo = edm_hexval(s[i + 1]);

		if (hi < 0 || lo < 0)
			return fail(p, FERR_LITERAL, start, "binary literal has a character that is not a hex digit");
		b[i / 2] = (char) (hi << 4 | lo);
	}
	lit->type = FLIT_BINARY;
	lit->v.bytes.data = b;
	lit->v.bytes.len = n / 2;
	return true;
}

/*
 * A typed literal: prefix'...' (datetime, guid, X, binary).
 */
static bool
lex_typed(Parser *p, Token *t, size_t start, size_t preflen)
{
	char	   *body;
	size_t		n;
	char		prefix[16];
	char		piece[CLIP_BUFLEN];

	if (preflen >= sizeof(prefix))
		return fail(p, FERR_LITERAL, start, "unrecognized type prefix \"%s\"",
					clip(p->text + start, preflen, piece));
	for (size_t i = 0; i < preflen; i++)
	{
		char		c = p->text[start + i];

		prefix[i] = (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
	}
	prefix[preflen] = '\0';
	if (!lex_quoted(p, &body, &n))
		return false;
	t->kind = TOK_LITERAL;
	t->len = p->pos - start;
	if (strcmp(prefix, "datetime") == 0)
	{
		t->lit.type = FLIT_DATETIME;
		switch (edm_parse_datetime(body, n, &t->lit.v.ticks))
		{
			case EDM_TEXT_OK:
				return true;
			case EDM_TEXT_OUT_OF_RANGE:
				return fail(p, FERR_OUT_OF_RANGE, start, "DateTime literal \"%s\" is out of range",
							clip(body, n, piece));
			case EDM_TEXT_MALFORMED:
				break;
		}
		return fail(p, FERR_LITERAL, start,
					"invalid DateTime literal \"%s\"; expected YYYY-MM-DDTHH:MM:SS[.fffffff]Z",
					clip(body, n, piece));
	}
	if (strcmp(prefix, "guid") == 0)
	{
		t->lit.type = FLIT_GUID;
		if (!edm_parse_guid(body, n, t->lit.v.guid))
			return fail(p, FERR_LITERAL, start, "invalid Guid literal \"%s\"", clip(body, n, piece));
		return true;
	}
	if (strcmp(prefix, "x") == 0 || strcmp(prefix, "binary") == 0)
		return decode_hex(p, start, body, n, &t->lit);
	return fail(p, FERR_LITERAL, start, "unrecognized type prefix \"%s\"", prefix);
}

static bool
is_keyword(const Parser *p, const Token *t)
{
	static const char *const kw[] = {"and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le",
	"true", "false", "null", "add", "sub", "mul", "div", "mod"};

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (word_is(p, t, kw[i]))
			return true;
	return false;
}

/* Read the next token into p->tok. */
static bool
next(Parser *p)
{
	Token	   *t = &p->tok;

	memset(t, 0, sizeof(*t));
	while (p->pos < p->len && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' ||
							   p->text[p->pos] == '\n' || p->text[p->pos] == '\r'))
		p->pos++;
	t->start = p->pos;
	if (p->pos >= p->len)
	{
		t->kind = TOK_END;
		return true;
	}

	switch (p->text[p->pos])
	{
		case '(':
			t->kind = TOK_LPAREN;
			t->len = 1;
			p->pos++;
			return true;
		case ')':
			t->kind = TOK_RPAREN;
			t->len = 1;
			p->pos++;
			return true;
		case ',':
			t->kind = TOK_COMMA;
			t->len = 1;
			p->pos++;
			return true;
		case '\'':
			t->kind = TOK_LITERAL;
			t->lit.type = FLIT_STRING;
			if (!lex_quoted(p, &t->lit.v.bytes.data, &t->lit.v.bytes.len))
				return false;
			t->len = p->pos - t->start;
			return true;
		default:
			break;
	}

	if (p->text[p->pos] == '-' || (p->text[p->pos] >= '0' && p->text[p->pos] <= '9'))
		return lex_number(p, t);

	if (is_ident_start((unsigned char) p->text[p->pos]))
	{
		size_t		start = p->pos;

		while (p->pos < p->len && is_ident_char((unsigned char) p->text[p->pos]))
			p->pos++;
		if (p->pos < p->len && p->text[p->pos] == '\'')
			return lex_typed(p, t, start, p->pos - start);
		t->kind = TOK_IDENT;
		t->len = p->pos - start;
		if (!is_keyword(p, t))
		{
			/* a name followed by "(" is a function call */
			size_t		i = p->pos;

			while (i < p->len && (p->text[i] == ' ' || p->text[i] == '\t'))
				i++;
			if (i < p->len && p->text[i] == '(')
				t->kind = TOK_FUNCTION;
		}
		return true;
	}
	return fail(p, FERR_SYNTAX, p->pos, "unexpected character \"%c\"", p->text[p->pos]);
}

static bool
comparison_op(const Parser *p, const Token *t, FilterOp *op)
{
	static const char *const names[] = {"eq", "ne", "gt", "ge", "lt", "le"};

	for (int i = 0; i < 6; i++)
		if (word_is(p, t, names[i]))
		{
			*op = (FilterOp) i;
			return true;
		}
	return false;
}

/*
 * Count a node of the tree against FILTER_MAX_NODES; false (with the
 * error) if there are too many.
 */
static bool
count_node(Parser *p, size_t at)
{
	if (++p->nnodes > FILTER_MAX_NODES)
		return fail(p, FERR_TOO_MANY, at, "a filter has at most %d operators and operands",
					FILTER_MAX_NODES);
	return true;
}

/* An operand: a property or a literal (true/false count as literals). */
typedef struct Operand
{
	bool		is_property;
	size_t		start;
	size_t		len;
	FilterLiteral lit;
} Operand;

static bool
parse_operand(Parser *p, Operand *o)
{
	char		buf[DESCRIBE_BUFLEN];
	char		piece[CLIP_BUFLEN];

	memset(o, 0, sizeof(*o));
	o->start = p->tok.start;
	o->len = p->tok.len;
	if (p->tok.kind == TOK_FUNCTION)
		return fail(p, FERR_NOT_IMPLEMENTED, p->tok.start, "function \"%s\" is not supported",
					clip(p->text + p->tok.start, p->tok.len, piece));
	if (p->tok.kind == TOK_LITERAL)
	{
		o->lit = p->tok.lit;
		return next(p);
	}
	if (p->tok.kind == TOK_IDENT)
	{
		if (word_is(p, &p->tok, "null"))
			return fail(p, FERR_NULL, p->tok.start, "the null literal is not supported");
		if (word_is(p, &p->tok, "true") || word_is(p, &p->tok, "false"))
		{
			o->lit.type = FLIT_BOOLEAN;
			o->lit.v.b = word_is(p, &p->tok, "true");
			return next(p);
		}
		if (!is_keyword(p, &p->tok))
		{
			o->is_property = true;
			return next(p);
		}
	}
	return fail(p, FERR_SYNTAX, p->tok.start,
				"expected a property name or a literal, found %s", describe(p, buf, sizeof(buf)));
}

static FilterNode *parse_or(Parser *p);

static FilterNode *
compare_node(Parser *p, const Operand *prop, FilterOp op, const FilterLiteral *lit)
{
	FilterNode *n;

	if (++p->ncompare > FILTER_MAX_COMPARISONS)
	{
		fail(p, FERR_TOO_MANY, prop->start, "a filter has at most %d comparisons",
			 FILTER_MAX_COMPARISONS);
		return NULL;
	}
	if (!count_node(p, prop->start))
		return NULL;
	n = palloc_node(p, sizeof(FilterNode));
	n->kind = FN_COMPARE;
	n->prop = p->alloc->alloc(p->alloc->ctx, prop->len + 1);
	memcpy(n->prop, p->text + prop->start, prop->len);
	n->prop[prop->len] = '\0';
	n->proplen = prop->len;
	n->op = op;
	n->lit = *lit;
	return n;
}

static FilterNode *
parse_primary(Parser *p)
{
	Operand		left;
	Operand		right;
	FilterOp	op;
	char		buf[DESCRIBE_BUFLEN];

	if (p->tok.kind == TOK_LPAREN)
	{
		FilterNode *n;
		size_t		open = p->tok.start;

		if (++p->depth > FILTER_MAX_DEPTH)
		{
			fail(p, FERR_SYNTAX, open, "filter is nested more than %d levels deep", FILTER_MAX_DEPTH);
			return NULL;
		}
		if (!next(p) || (n = parse_or(p)) == NULL)
			return NULL;
		if (p->tok.kind != TOK_RPAREN)
		{
			fail(p, FERR_SYNTAX, p->tok.start, "expected \")\" to close the \"(\" at position %d, found %s",
				 char_position(p, open), describe(p, buf, sizeof(buf)));
			return NULL;
		}
		p->depth--;
		return next(p) ? n : NULL;
	}

	if (!parse_operand(p, &left))
		return NULL;

	if (p->tok.kind == TOK_IDENT && comparison_op(p, &p->tok, &op))
	{
		if (!next(p) || !parse_operand(p, &right))
			return NULL;
		if (left.is_property && right.is_property)
		{
			fail(p, FERR_SYNTAX, right.start, "comparing two properties is not supported");
			return NULL;
		}
		if (!left.is_property && !right.is_property)
		{
			fail(p, FERR_SYNTAX, left.start, "a comparison needs a property on one side");
			return NULL;
		}
		if (left.is_property)
			return compare_node(p, &left, op, &right.lit);
		return compare_node(p, &right, filter_op_swap(op), &left.lit);
	}

	if (p->tok.kind == TOK_IDENT &&
		(word_is(p, &p->tok, "add") || word_is(p, &p->tok, "sub") || word_is(p, &p->tok, "mul") ||
		 word_is(p, &p->tok, "div") || word_is(p, &p->tok, "mod")))
	{
		fail(p, FERR_SYNTAX, p->tok.start, "arithmetic operators are not supported");
		return NULL;
	}

	if (left.is_property)
	{
		/* a bare Boolean property */
		FilterLiteral t;

		memset(&t, 0, sizeof(t));
		t.type = FLIT_BOOLEAN;
		t.v.b = true;
		return compare_node(p, &left, FOP_EQ, &t);
	}
	if (left.lit.type == FLIT_BOOLEAN)
	{
		FilterNode *n;

		if (++p->ncompare > FILTER_MAX_COMPARISONS)
		{
			fail(p, FERR_TOO_MANY, left.start, "a filter has at most %d comparisons (true and false count as one each)",
				 FILTER_MAX_COMPARISONS);
			return NULL;
		}
		if (!count_node(p, left.start))
			return NULL;
		n = palloc_node(p, sizeof(FilterNode));

		n->kind = FN_CONST;
		n->value = left.lit.v.b;
		return n;
	}
	fail(p, FERR_SYNTAX, p->tok.start, "expected a comparison operator (eq, ne, gt, ge, lt, le), found %s",
		 describe(p, buf, sizeof(buf)));
	return NULL;
}

static FilterNode *
parse_unary(Parser *p)
{
	if (p->tok.kind == TOK_IDENT && word_is(p, &p->tok, "not"))
	{
		FilterNode *n;
		FilterNode *arg;

		if (++p->depth > FILTER_MAX_DEPTH)
		{
			fail(p, FERR_SYNTAX, p->tok.start, "filter is nested more than %d levels deep",
				 FILTER_MAX_DEPTH);
			return NULL;
		}
		if (!count_node(p, p->tok.start) || !next(p) || (arg = parse_unary(p)) == NULL)
			return NULL;
		p->depth--;
		n = palloc_node(p, sizeof(FilterNode));
		n->kind = FN_NOT;
		n->left = arg;
		return n;
	}
	return parse_primary(p);
}

static FilterNode *
parse_binary(Parser *p, bool is_or)
{
	FilterNode *left = is_or ? parse_binary(p, false) : parse_unary(p);

	while (left != NULL && p->tok.kind == TOK_IDENT &&
		   word_is(p, &p->tok, is_or ? "or" : "and"))
	{
		FilterNode *n;
		FilterNode *right;

		if (!count_node(p, p->tok.start) || !next(p))
			return NULL;
		right = is_or ? parse_binary(p, false) : parse_unary(p);
		if (right == NULL)
			return NULL;
		n = palloc_node(p, sizeof(FilterNode));
		n->kind = is_or ? FN_OR : FN_AND;
		n->left = left;
		n->right = right;
		left = n;
	}
	return left;
}

static FilterNode *
parse_or(Parser *p)
{
	return parse_binary(p, true);
}

/*
 * filter_parse: see filter.h.
 */
bool
filter_parse(const char *text, size_t len, const FilterAllocator *alloc,
			 FilterNode **tree, FilterError *err)
{
	Parser		p;
	FilterNode *n;
	char		buf[DESCRIBE_BUFLEN];

	memset(&p, 0, sizeof(p));
	memset(err, 0, sizeof(*err));
	p.text = text;
	p.len = len;
	p.alloc = alloc;
	p.err = err;

	/* SQL text never holds NUL; reject it so that no literal can either */
	if (memchr(text, '\0', len) != NULL)
		return fail(&p, FERR_SYNTAX, (const char *) memchr(text, '\0', len) - text,
					"filter contains a NUL byte");
	if (!next(&p))
		return false;
	if (p.tok.kind == TOK_END)
	{
		n = palloc_node(&p, sizeof(FilterNode));
		n->kind = FN_CONST;
		n->value = true;
		*tree = n;
		return true;
	}
	n = parse_or(&p);
	if (n == NULL)
		return false;
	if (p.tok.kind != TOK_END)
		return fail(&p, FERR_SYNTAX, p.tok.start, "expected \"and\", \"or\" or the end of the filter, found %s",
					describe(&p, buf, sizeof(buf)));
	*tree = n;
	return true;
}

FilterOp
filter_op_swap(FilterOp op)
{
	switch (op)
	{
		case FOP_GT:
			return FOP_LT;
		case FOP_GE:
			return FOP_LE;
		case FOP_LT:
			return FOP_GT;
		case FOP_LE:
			return FOP_GE;
		default:
			return op;
	}
}

const char *
filter_op_name(FilterOp op)
{
	static const char *const names[] = {"eq", "ne", "gt", "ge", "lt", "le"};

	return names[op];
}
