/*-------------------------------------------------------------------------
 *
 * xml.c
 *	  A small, strict reader of the XML request bodies of the service's
 *	  XML endpoints (Set Table Service Properties), and the escaping of
 *	  text written into XML answers.
 *
 * Only what those documents use is accepted: an optional UTF-8 byte order
 * mark and XML declaration, elements (attributes are read and ignored),
 * character data with the five predefined entities and character
 * references, CDATA sections and comments.  There is no DTD, so no entity
 * can be defined or expanded (a DOCTYPE, like any processing instruction
 * after the declaration, makes the document invalid), and the input must
 * be valid UTF-8 without control characters.  The tree is bounded in depth
 * and in nodes, so whatever a client sends costs at most a fixed multiple
 * of its size.  An element may hold text or elements, not both (mixed
 * content is no part of these documents).
 *
 *-------------------------------------------------------------------------
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "xml.h"

#include "buf.h"

typedef struct XmlReader
{
	const char *p;
	const char *end;
	int			nodes;
	const char *why;
} XmlReader;

/* fail: record the first reason and fail. */
static bool
fail(XmlReader *x, const char *why)
{
	if (x->why == NULL)
		x->why = why;
	return false;
}

/* valid_utf8: whether the text is UTF-8 without NUL or control bytes
 * other than tab, newline and carriage return, and without the characters
 * XML 1.0 does not allow (surrogates, U+FFFE, U+FFFF). */
static bool
valid_utf8(const unsigned char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		unsigned char c = s[i];
		int			n;
		unsigned int cp;

		if (c < 0x80)
		{
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				return false;
			if (c == 0x7f)
				return false;
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			n = 1, cp = c & 0x1f;
		else if ((c & 0xf0) == 0xe0)
			n = 2, cp = c & 0x0f;
		else if ((c & 0xf8) == 0xf0)
			n = 3, cp = c & 0x07;
		else
			return false;
		if (i + n >= len)
			return false;
		for (int k = 1; k <= n; k++)
		{
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
			cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
			return false;
		i += n + 1;
	}
	return true;
}

/* put_utf8: append a code point as UTF-8. */
static void
put_utf8(Buf *b, unsigned int cp)
{
	char		o[4];

	if (cp < 0x80)
	{
		o[0] = (char) cp;
		buf_append(b, o, 1);
	}
	else if (cp < 0x800)
	{
		o[0] = (char) (0xc0 | (cp >> 6));
		o[1] = (char) (0x80 | (cp & 0x3f));
		buf_append(b, o, 2);
	}
	else if (cp < 0x10000)
	{
		o[0] = (char) (0xe0 | (cp >> 12));
		o[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char) (0x80 | (cp & 0x3f));
		buf_append(b, o, 3);
	}
	else
	{
		o[0] = (char) (0xf0 | (cp >> 18));
		o[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
		o[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
		o[3] = (char) (0x80 | (cp & 0x3f));
		buf_append(b, o, 4);
	}
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool
is_name_char(char c, bool first)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' ||
		(unsigned char) c >= 0x80)
		return true;
	return !first && ((c >= '0' && c <= '9') || c == '-' || c == '.');
}

static bool
starts(XmlReader *x, const char *s)
{
	size_t		n = strlen(s);

	return (size_t) (x->end - x->p) >= n && memcmp(x->p, s, n) == 0;
}

static void
skip_space(XmlReader *x)
{
	while (x->p < x->end && is_space(*x->p))
		x->p++;
}

/* skip_misc: whitespace and comments. */
static bool
skip_misc(XmlReader *x)
{
	for (;;)
	{
		skip_space(x);
		if (!starts(x, "<!--"))
			return true;
		{
			const char *e = memmem(x->p + 4, x->end - x->p - 4, "--", 2);

			if (e == NULL || e + 2 >= x->end || e[2] != '>')
				return fail(x, "a comment is not closed (or holds --)");
			x->p = e + 3;
		}
	}
}

/* read_name: an element or attribute name, NUL-terminated copy. */
static char *
read_name(XmlReader *x)
{
	const char *s = x->p;

	if (x->p >= x->end || !is_name_char(*x->p, true))
		return NULL;
	while (x->p < x->end && is_name_char(*x->p, false))
		x->p++;
	if (x->p - s > 256)
		return NULL;
	return xstrndup(s, x->p - s);
}

/*
 * read_entity: decode the reference at x->p ('&') into b.  The five
 * predefined entities and decimal or hexadecimal character references.
 */
static bool
read_entity(XmlReader *x, Buf *b)
{
	const char *semi = memchr(x->p, ';', x->end - x->p < 16 ? x->end - x->p : 16);
	size_t		n;

	if (semi == NULL)
		return fail(x, "an & that starts no entity or character reference");
	n = semi - x->p - 1;
	if (n == 3 && memcmp(x->p + 1, "amp", 3) == 0)
		buf_append(b, "&", 1);
	else if (n == 2 && memcmp(x->p + 1, "lt", 2) == 0)
		buf_append(b, "<", 1);
	else if (n == 2 && memcmp(x->p + 1, "gt", 2) == 0)
		buf_append(b, ">", 1);
	else if (n == 4 && memcmp(x->p + 1, "quot", 4) == 0)
		buf_append(b, "\"", 1);
	else if (n == 4 && memcmp(x->p + 1, "apos", 4) == 0)
		buf_append(b, "'", 1);
	else if (n >= 2 && x->p[1] == '#')
	{
		bool		hex = x->p[2] == 'x';
		const char *d = x->p + (hex ? 3 : 2);
		unsigned long cp = 0;

		if (d >= semi || semi - d > 8)
			return fail(x, "a malformed character reference");
		for (; d < semi; d++)
		{
			int			v;

			if (*d >= '0' && *d <= '9')
				v = *d - '0';
			else if (hex && *d >= 'a' && *d <= 'f')
				v = *d - 'a' + 10;
			else if (hex && *d >= 'A' && *d <= 'F')
				v = *d - 'A' + 10;
			else
				return fail(x, "a malformed character reference");
			cp = cp * (hex ? 16 : 10) + v;
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
			(cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xfffe || cp == 0xffff)
			return fail(x, "a character reference to a character XML does not allow");
		put_utf8(b, (unsigned int) cp);
	}
	else
		return fail(x, "an undefined entity (no DTD: only amp, lt, gt, quot, apos)");
	x->p = semi + 1;
	return true;
}

/* skip_attributes: attributes up to '>' or '/>' (read, checked, ignored). */
static bool
skip_attributes(XmlReader *x)
{
	for (;;)
	{
		char	   *name;
		char		q;

		skip_space(x);
		if (x->p >= x->end)
			return fail(x, "the document ends inside a tag");
		if (*x->p == '>' || *x->p == '/')
			return true;
		if ((name = read_name(x)) == NULL)
			return fail(x, "a malformed attribute");
		free(name);
		skip_space(x);
		if (x->p >= x->end || *x->p != '=')
			return fail(x, "an attribute without a value");
		x->p++;
		skip_space(x);
		if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
			return fail(x, "an attribute value without quotes");
		q = *x->p++;
		while (x->p < x->end && *x->p != q)
		{
			if (*x->p == '<')
				return fail(x, "a < in an attribute value");
			x->p++;
		}
		if (x->p >= x->end)
			return fail(x, "an attribute value is not closed");
		x->p++;
	}
}

/* read_element: the element at x->p ('<'), its content and end tag. */
static XmlNode *
read_element(XmlReader *x, int depth)
{
	XmlNode    *n;
	XmlNode   **tail;
	Buf			text = {0};
	bool		only_space = true;

	if (depth > GW_XML_MAX_DEPTH)
	{
		fail(x, "the document nests too deep");
		return NULL;
	}
	if (++x->nodes > GW_XML_MAX_NODES)
	{
		fail(x, "the document has too many elements");
		return NULL;
	}
	x->p++;						/* '<' */
	n = xmalloc(sizeof(XmlNode));
	memset(n, 0, sizeof(*n));
	tail = &n->child;
	if ((n->name = read_name(x)) == NULL)
	{
		fail(x, "a malformed element name");
		goto bad;
	}
	if (!skip_attributes(x))
		goto bad;
	if (*x->p == '/')
	{
		if (x->p + 1 >= x->end || x->p[1] != '>')
		{
			fail(x, "a malformed empty-element tag");
			goto bad;
		}
		x->p += 2;
		n->text = xstrdup("");
		return n;
	}
	x->p++;						/* '>' */
	buf_append(&text, "", 0);
	for (;;)
	{
		if (x->p >= x->end)
		{
			fail(x, "an element is not closed");
			goto bad;
		}
		if (starts(x, "</"))
		{
			size_t		len = strlen(n->name);

			x->p += 2;
			if ((size_t) (x->end - x->p) < len || memcmp(x->p, n->name, len) != 0 ||
				(x->p + len < x->end && is_name_char(x->p[len], false)))
			{
				fail(x, "an end tag does not match its start tag");
				goto bad;
			}
			x->p += len;
			skip_space(x);
			if (x->p >= x->end || *x->p != '>')
			{
				fail(x, "a malformed end tag");
				goto bad;
			}
			x->p++;
			break;
		}
		if (starts(x, "<!--"))
		{
			if (!skip_misc(x))
				goto bad;
			continue;
		}
		if (starts(x, "<![CDATA["))
		{
			const char *e = memmem(x->p + 9, x->end - x->p - 9, "]]>", 3);

			if (e == NULL)
			{
				fail(x, "a CDATA section is not closed");
				goto bad;
			}
			if (e > x->p + 9)
				only_space = false;
			buf_append(&text, x->p + 9, e - (x->p + 9));
			x->p = e + 3;
			continue;
		}
		if (starts(x, "<!") || starts(x, "<?"))
		{
			fail(x, "a DOCTYPE, declaration or processing instruction inside the document");
			goto bad;
		}
		if (*x->p == '<')
		{
			XmlNode    *c = read_element(x, depth + 1);

			if (c == NULL)
				goto bad;
			*tail = c;
			tail = &c->next;
			n->nchild++;
			continue;
		}
		if (*x->p == '&')
		{
			if (!read_entity(x, &text))
				goto bad;
			only_space = false;
			continue;
		}
		if (!is_space(*x->p))
			only_space = false;
		buf_append(&text, x->p, 1);
		x->p++;
	}
	if (n->child != NULL && !only_space)
	{
		fail(x, "an element holds both text and elements");
		goto bad;
	}
	n->text = text.data;
	return n;
bad:
	buf_free(&text);
	xml_free(n);
	return NULL;
}

/*
 * xml_parse: the document's root element, or NULL with *why saying what
 * is wrong.  The caller frees the tree with xml_free.
 */
XmlNode *
xml_parse(const char *text, size_t len, const char **why)
{
	XmlReader	x = {text, text + len, 0, NULL};
	XmlNode    *root;

	*why = NULL;
	if (!valid_utf8((const unsigned char *) text, len))
	{
		*why = "the document is not UTF-8 text without control characters";
		return NULL;
	}
	if (starts(&x, "\xef\xbb\xbf"))
		x.p += 3;
	if (starts(&x, "<?xml") && x.p + 5 < x.end && is_space(x.p[5]))
	{
		const char *e = memmem(x.p, x.end - x.p, "?>", 2);

		if (e == NULL)
		{
			*why = "the XML declaration is not closed";
			return NULL;
		}
		x.p = e + 2;
	}
	if (!skip_misc(&x))
	{
		*why = x.why;
		return NULL;
	}
	if (x.p >= x.end || *x.p != '<' || starts(&x, "<!") || starts(&x, "<?"))
	{
		*why = x.p >= x.end ? "the document is empty" : "no root element (a DOCTYPE or processing instruction is not accepted)";
		return NULL;
	}
	root = read_element(&x, 1);
	if (root == NULL)
	{
		*why = x.why ? x.why : "malformed XML";
		return NULL;
	}
	if (!skip_misc(&x) || x.p != x.end)
	{
		xml_free(root);
		*why = x.why ? x.why : "content after the root element";
		return NULL;
	}
	return root;
}

/* xml_free: free a tree from xml_parse. */
void
xml_free(XmlNode *n)
{
	while (n != NULL)
	{
		XmlNode    *next = n->next;

		xml_free(n->child);
		free(n->name);
		free(n->text);
		free(n);
		n = next;
	}
}

/* xml_escape: append text escaped for XML character data or attributes. */
void
xml_escape(Buf *b, const char *s)
{
	for (; *s; s++)
	{
		switch (*s)
		{
			case '<':
				buf_puts(b, "&lt;");
				break;
			case '>':
				buf_puts(b, "&gt;");
				break;
			case '&':
				buf_puts(b, "&amp;");
				break;
			case '"':
				buf_puts(b, "&quot;");
				break;
			case '\'':
				buf_puts(b, "&apos;");
				break;
			default:
				buf_append(b, s, 1);
		}
	}
}
