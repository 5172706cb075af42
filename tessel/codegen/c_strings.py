"""The string runtime of the generated C: ONNX's string tensors (issue 26), emitted after the
prelude into a file whose code uses them (the `tessel_string` type).

A string element is a `tessel_string`, the address of its UTF-8 bytes and their count; the bytes
are followed by a NUL, which the runtime adds to every string it makes (the executor does for
inputs, tessel/runtime/strings.py). Kernels compute element by element through the functions
below, which the string operators' computes call (`T.call_pure_extern`, tessel/topi/strings.py).

The bytes of the strings a call makes live in the calling thread's heap: a list of chunks,
emptied (not freed) by `tessel_strings_reset` at the start of every call of the model's main,
so what one call returns stays valid until the next call on the same thread, and calls on
different threads never share a heap. A thread's chunks are freed when it exits. Running out of
memory makes a function return the empty string and marks the heap failed; main then returns
an error (`tessel_strings_status`), never a wrong string.

Regular expressions are POSIX extended ones (glibc's regcomp: compiled once and kept for the
first 64 patterns, compiled at each use beyond), translated from RE2's syntax at compile time
(tessel/graph/op/string_regex.py), matched in the C.UTF-8 locale, so that `.` and bracket
expressions take whole code points. Case changes map code point by code point with
towupper/towlower in the same locale, as onnxruntime's StringNormalizer does with its locale.
"""

from __future__ import annotations

USES_STRINGS = "tessel_string"  # the element type, in every file that holds a string tensor

_RUNTIME = r"""
/* The string runtime (tessel/codegen/c_strings.py). */
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <regex.h>
#include <wchar.h>
#include <wctype.h>

typedef struct {
  const char* data;
  int64_t size;
} tessel_string;

#define TESSEL_STRING_CHUNK 65536

typedef struct tessel_string_chunk {
  struct tessel_string_chunk* next;
  size_t size;
  size_t used;
  char bytes[];
} tessel_string_chunk;

typedef struct {
  tessel_string_chunk* chunks;
  int failed;
} tessel_string_heap;

static pthread_key_t tessel_string_heap_key;
static pthread_once_t tessel_string_once = PTHREAD_ONCE_INIT;
static locale_t tessel_string_utf8 = (locale_t)0;

static void tessel_string_heap_free(void* pointer) {
  tessel_string_heap* heap = (tessel_string_heap*)pointer;
  while (heap->chunks != NULL) {
    tessel_string_chunk* next = heap->chunks->next;
    free(heap->chunks);
    heap->chunks = next;
  }
  free(heap);
}

static void tessel_string_setup(void) {
  if (pthread_key_create(&tessel_string_heap_key, tessel_string_heap_free) != 0) return;
  tessel_string_utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* This thread's heap (made on first use), or NULL if it cannot be made. */
static tessel_string_heap* tessel_string_heap_get(void) {
  pthread_once(&tessel_string_once, tessel_string_setup);
  tessel_string_heap* heap = (tessel_string_heap*)pthread_getspecific(tessel_string_heap_key);
  if (heap != NULL) return heap;
  heap = (tessel_string_heap*)calloc(1, sizeof(tessel_string_heap));
  if (heap != NULL && pthread_setspecific(tessel_string_heap_key, heap) != 0) {
    free(heap);
    heap = NULL;
  }
  return heap;
}

/* `n` bytes of this thread's heap, or NULL (the heap is then marked failed). */
static char* tessel_string_alloc(size_t n) {
  tessel_string_heap* heap = tessel_string_heap_get();
  if (heap == NULL) return NULL;
  for (tessel_string_chunk* chunk = heap->chunks; chunk != NULL; chunk = chunk->next) {
    if (chunk->size - chunk->used >= n) {
      char* bytes = chunk->bytes + chunk->used;
      chunk->used += n;
      return bytes;
    }
  }
  size_t size = n > TESSEL_STRING_CHUNK ? n : TESSEL_STRING_CHUNK;
  tessel_string_chunk* chunk = (tessel_string_chunk*)malloc(sizeof(tessel_string_chunk) + size);
  if (chunk == NULL) {
    heap->failed = 1;
    return NULL;
  }
  chunk->next = heap->chunks;
  chunk->size = size;
  chunk->used = n;
  heap->chunks = chunk;
  return chunk->bytes;
}

static const tessel_string tessel_string_empty = {"", 0};

/* Empty this thread's heap for a new call (its chunks are kept for reuse). */
TESSEL_EXPORT int32_t tessel_strings_reset(void) {
  tessel_string_heap* heap = tessel_string_heap_get();
  if (heap == NULL) return -1;
  for (tessel_string_chunk* chunk = heap->chunks; chunk != NULL; chunk = chunk->next) {
    chunk->used = 0;
  }
  heap->failed = 0;
  return 0;
}

/* 0 if every string of this call was made, else -1 (out of memory, no UTF-8 locale, or a
   pattern glibc does not compile). */
TESSEL_EXPORT int32_t tessel_strings_status(void) {
  tessel_string_heap* heap = tessel_string_heap_get();
  return heap != NULL && !heap->failed ? 0 : -1;
}

static void tessel_string_fail(void) {
  tessel_string_heap* heap = tessel_string_heap_get();
  if (heap != NULL) heap->failed = 1;
}

static tessel_string tessel_string_concat(tessel_string a, tessel_string b) {
  char* bytes = tessel_string_alloc((size_t)(a.size + b.size) + 1);
  if (bytes == NULL) return tessel_string_empty;
  memcpy(bytes, a.data, (size_t)a.size);
  memcpy(bytes + a.size, b.data, (size_t)b.size);
  bytes[a.size + b.size] = 0;
  tessel_string result = {bytes, a.size + b.size};
  return result;
}

static bool tessel_string_equal(tessel_string a, tessel_string b) {
  return a.size == b.size && memcmp(a.data, b.data, (size_t)a.size) == 0;
}

/* The string with each code point mapped by towupper (upper != 0) or towlower; bytes that are
   not UTF-8 are kept as they are. */
static tessel_string tessel_string_change_case(tessel_string s, int32_t upper) {
  pthread_once(&tessel_string_once, tessel_string_setup);
  if (tessel_string_utf8 == (locale_t)0) {
    tessel_string_fail();
    return tessel_string_empty;
  }
  /* A code point's case partner takes at most 3 bytes where it took 2, never more otherwise. */
  char* bytes = tessel_string_alloc((size_t)s.size * 2 + 1);
  if (bytes == NULL) return tessel_string_empty;
  locale_t before = uselocale(tessel_string_utf8);
  mbstate_t in, out;
  memset(&in, 0, sizeof in);
  memset(&out, 0, sizeof out);
  int64_t read = 0, written = 0;
  while (read < s.size) {
    wchar_t wc;
    size_t n = mbrtowc(&wc, s.data + read, (size_t)(s.size - read), &in);
    if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
      bytes[written++] = s.data[read++];
      memset(&in, 0, sizeof in);
      continue;
    }
    wint_t mapped = upper ? towupper_l((wint_t)wc, tessel_string_utf8)
                          : towlower_l((wint_t)wc, tessel_string_utf8);
    char encoded[MB_LEN_MAX];
    size_t m = wcrtomb(encoded, (wchar_t)mapped, &out);
    if (m == (size_t)-1 || written + (int64_t)m > s.size * 2) {
      memcpy(bytes + written, s.data + read, n);
      written += (int64_t)n;
    } else {
      memcpy(bytes + written, encoded, m);
      written += (int64_t)m;
    }
    read += (int64_t)n;
  }
  uselocale(before);
  bytes[written] = 0;
  tessel_string result = {bytes, written};
  return result;
}

#define TESSEL_REGEX_CACHE 64

typedef struct {
  const char* pattern;
  int32_t flags;
  int ok;
  regex_t compiled;
} tessel_regex_entry;

static tessel_regex_entry tessel_regex_cache[TESSEL_REGEX_CACHE];
static int tessel_regex_count = 0;
static pthread_mutex_t tessel_regex_lock = PTHREAD_MUTEX_INITIALIZER;

/* The compiled form of `pattern` (a literal of the generated code: one address per pattern),
   kept for the library's life; NULL if it does not compile, or if the cache is full (`*full`
   is then set, and the caller compiles a copy of its own). */
static const regex_t* tessel_regex_compiled(const char* pattern, int32_t flags, int* full) {
  const regex_t* found = NULL;
  pthread_mutex_lock(&tessel_regex_lock);
  for (int k = 0; k < tessel_regex_count; ++k) {
    if (tessel_regex_cache[k].pattern == pattern && tessel_regex_cache[k].flags == flags) {
      found = tessel_regex_cache[k].ok ? &tessel_regex_cache[k].compiled : NULL;
      pthread_mutex_unlock(&tessel_regex_lock);
      return found;
    }
  }
  if (tessel_regex_count < TESSEL_REGEX_CACHE) {
    tessel_regex_entry* entry = &tessel_regex_cache[tessel_regex_count++];
    entry->pattern = pattern;
    entry->flags = flags;
    locale_t before = uselocale(tessel_string_utf8);
    entry->ok = regcomp(&entry->compiled, pattern, REG_EXTENDED | REG_NOSUB | flags) == 0;
    uselocale(before);
    found = entry->ok ? &entry->compiled : NULL;
  } else {
    *full = 1;
  }
  pthread_mutex_unlock(&tessel_regex_lock);
  return found;
}

/* Whether the whole of `s` matches the POSIX extended expression `pattern` (anchored by the
   compiler: `^(...)$`); `flags` 1 ignores case. */
static bool tessel_string_regex_full_match(tessel_string s, const char* pattern, int32_t flags) {
  pthread_once(&tessel_string_once, tessel_string_setup);
  if (tessel_string_utf8 == (locale_t)0) {
    tessel_string_fail();
    return false;
  }
  int full = 0;
  const regex_t* compiled = tessel_regex_compiled(pattern, flags ? REG_ICASE : 0, &full);
  regex_t own;
  locale_t before = uselocale(tessel_string_utf8);
  if (full && regcomp(&own, pattern, REG_EXTENDED | REG_NOSUB | (flags ? REG_ICASE : 0)) == 0) {
    compiled = &own;
  }
  if (compiled == NULL) {
    uselocale(before);
    tessel_string_fail();
    return false;
  }
  regmatch_t range[1];
  range[0].rm_so = 0;
  range[0].rm_eo = (regoff_t)s.size;
  int result = regexec(compiled, s.data, 1, range, REG_STARTEND);
  if (compiled == &own) regfree(&own);
  uselocale(before);
  return result == 0;
}
"""

STRING_RUNTIME = _RUNTIME.strip()


def needs_string_runtime(code: str) -> bool:
    """Whether generated C `code` holds string tensors."""
    return USES_STRINGS in code


__all__ = ["STRING_RUNTIME", "needs_string_runtime"]
