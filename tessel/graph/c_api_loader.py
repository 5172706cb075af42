"""The fixed C text of an exported model's C API (tessel.graph.c_api): error messages, name
lookup, and reading the weights from params.safetensors (or the raw params.bin).

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON (an object: each
tensor's name maps to `{"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}`, plus an
optional `"__metadata__"` object), then the data. The reader parses that JSON strictly (strings
with every escape, `\\uXXXX` surrogate pairs included, decoded to UTF-8; integers; nesting
limited), checks each weight's dtype, shape and byte range against the model's table, and
copies it into storage the handle owns. Any mismatch is an error naming the weight.

The reader is the same text for every model: the model's part (c_api.py) hands it the weight
table (`tessel_api_weight_table`). So it is a translation unit of its own (`LOADER_UNIT`),
compiled once per machine and flags and linked into every model's library from the compiler's
cache, at -O2 (tessel.runtime.compiler's support units: it runs once per handle, and gcc takes
twice as long on it at -O3).
"""

from __future__ import annotations

from tessel.codegen.c_prelude import ERROR_MESSAGE_DECLARATION, VISIBILITY

# One tensor of the model, as the C API describes it (the header declares the same type).
TENSOR_INFO_TYPE = """\
/* One input, output or weight of the model. `name` is its UTF-8 name, NUL-terminated; a name
   that holds a NUL byte is cut there, and `name_length` counts all its bytes. */
typedef struct {
  const char* name;
  size_t name_length;
  const char* dtype;       /* "float32", "int64", ... */
  int32_t ndim;
  const int64_t* shape;    /* `ndim` extents */
  size_t nbytes;           /* of the dense, C-contiguous (row-major) array */
} tessel_model_tensor_info;
"""

# What the model's part and the reader share: the weight table and the reader's functions.
API_DECLARATIONS = r"""
/* The weights of a model, as the reader checks and places them. */
typedef struct {
  int count;
  const tessel_model_tensor_info* infos;  /* `count` of them */
  const char* const* st_dtypes;           /* each one's safetensors dtype: "F32", ... */
  const size_t* offsets;                  /* where each one starts in the storage */
  size_t bytes;                           /* the storage they need */
} tessel_api_weight_table;

/* Set the thread's error message (tessel_model_last_error), printf-style. */
TESSEL_INTERNAL void tessel_api_error(const char* format, ...);
/* The position of the tensor called `name` (NUL-terminated) in `table`, or -1. */
TESSEL_INTERNAL int tessel_api_find(const tessel_model_tensor_info* table, int count,
                                    const char* name);
/* The weights of the file at `path` (params.bin when its name ends in ".bin", else
   safetensors) in new storage, 64-byte aligned; NULL after setting the error. */
TESSEL_INTERNAL unsigned char* tessel_api_load_weights(const char* path,
                                                       const tessel_api_weight_table* weights);
"""

_READER = r"""
/* ---- The model's C API: the weights reader (tessel/graph/c_api_loader.py) ---- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the model's weights files are little-endian; this C API reads them on little-endian hosts"
#endif

#define TESSEL_API_ALIGNMENT 64
#define TESSEL_API_MAX_DEPTH 64

TESSEL_INTERNAL void tessel_api_error(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(tessel_error_message, sizeof(tessel_error_message), format, args);
  va_end(args);
}

TESSEL_INTERNAL int tessel_api_find(const tessel_model_tensor_info* table, int count,
                                    const char* name) {
  if (name == NULL) return -1;
  size_t length = strlen(name);
  for (int i = 0; i < count; ++i) {
    if (table[i].name_length == length && memcmp(table[i].name, name, length) == 0) return i;
  }
  return -1;
}

/* The whole file at `path`, in a malloc'ed buffer; NULL after setting the error. */
static unsigned char* tessel_api_read_file(const char* path, size_t* size) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    tessel_api_error("cannot open the weights file %.400s", path);
    return NULL;
  }
  unsigned char* bytes = NULL;
  long length = -1;
  if (fseek(file, 0, SEEK_END) == 0) length = ftell(file);
  if (length >= 0 && fseek(file, 0, SEEK_SET) == 0) bytes = malloc((size_t)length + 1);
  if (bytes != NULL && fread(bytes, 1, (size_t)length, file) != (size_t)length) {
    free(bytes);
    bytes = NULL;
  }
  fclose(file);
  if (bytes == NULL) tessel_api_error("cannot read the weights file %.400s", path);
  *size = bytes == NULL ? 0 : (size_t)length;
  return bytes;
}

/* A cursor over the JSON header of a safetensors file. */
typedef struct {
  const char* at;
  const char* end;
} tessel_json;

static void tessel_json_space(tessel_json* j) {
  while (j->at < j->end && (*j->at == ' ' || *j->at == '\t' || *j->at == '\n' || *j->at == '\r'))
    ++j->at;
}

/* Skip blanks, then take the character `c`; 0 when the next one is another. */
static int tessel_json_take(tessel_json* j, char c) {
  tessel_json_space(j);
  if (j->at >= j->end || *j->at != c) return 0;
  ++j->at;
  return 1;
}

static int tessel_json_hex4(tessel_json* j, unsigned* value) {
  *value = 0;
  for (int k = 0; k < 4; ++k, ++j->at) {
    if (j->at >= j->end) return 0;
    char c = *j->at;
    int digit = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return 0;
    *value = *value * 16 + (unsigned)digit;
  }
  return 1;
}

static size_t tessel_utf8(unsigned code, unsigned char* out) {
  if (code < 0x80) { out[0] = (unsigned char)code; return 1; }
  if (code < 0x800) {
    out[0] = (unsigned char)(0xC0 | code >> 6);
    out[1] = (unsigned char)(0x80 | (code & 0x3F));
    return 2;
  }
  if (code < 0x10000) {
    out[0] = (unsigned char)(0xE0 | code >> 12);
    out[1] = (unsigned char)(0x80 | (code >> 6 & 0x3F));
    out[2] = (unsigned char)(0x80 | (code & 0x3F));
    return 3;
  }
  out[0] = (unsigned char)(0xF0 | code >> 18);
  out[1] = (unsigned char)(0x80 | (code >> 12 & 0x3F));
  out[2] = (unsigned char)(0x80 | (code >> 6 & 0x3F));
  out[3] = (unsigned char)(0x80 | (code & 0x3F));
  return 4;
}

/* One escape after a backslash, decoded into `out`; the number of bytes, 0 if malformed. */
static size_t tessel_json_escape(tessel_json* j, unsigned char* out) {
  if (j->at >= j->end) return 0;
  char c = *j->at++;
  const char* plain = "\"\\/bfnrt";
  const char* value = "\"\\/\b\f\n\r\t";
  const char* found = c != '\0' ? strchr(plain, c) : NULL;
  if (found != NULL) {
    out[0] = (unsigned char)value[found - plain];
    return 1;
  }
  unsigned code, low;
  if (c != 'u' || !tessel_json_hex4(j, &code)) return 0;
  if (code >= 0xDC00 && code <= 0xDFFF) return 0;  /* a lone low surrogate */
  if (code >= 0xD800 && code <= 0xDBFF) {           /* a high one: its low one must follow */
    if (j->end - j->at < 2 || j->at[0] != '\\' || j->at[1] != 'u') return 0;
    j->at += 2;
    if (!tessel_json_hex4(j, &low) || low < 0xDC00 || low > 0xDFFF) return 0;
    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
  }
  return tessel_utf8(code, out);
}

/* A JSON string, decoded into a malloc'ed buffer (*text, *length: it may hold NUL bytes);
   0 when malformed. A decoded string is never longer than its JSON text. */
static int tessel_json_string(tessel_json* j, unsigned char** text, size_t* length) {
  *text = NULL;
  if (!tessel_json_take(j, '"')) return 0;
  unsigned char* out = malloc((size_t)(j->end - j->at) + 1);
  if (out == NULL) return 0;
  size_t n = 0;
  while (j->at < j->end && *j->at != '"') {
    unsigned char c = (unsigned char)*j->at++;
    size_t added = 1;
    if (c == '\\') added = tessel_json_escape(j, out + n);
    else if (c < 0x20) added = 0;  /* control characters must be escaped */
    else out[n] = c;
    if (added == 0) { free(out); return 0; }
    n += added;
  }
  if (j->at >= j->end) { free(out); return 0; }
  ++j->at;
  out[n] = 0;
  *text = out;
  *length = n;
  return 1;
}

/* A non-negative JSON integer (what shapes and offsets are); 0 when malformed or too large. */
static int tessel_json_count(tessel_json* j, int64_t* value) {
  tessel_json_space(j);
  *value = 0;
  const char* start = j->at;
  while (j->at < j->end && *j->at >= '0' && *j->at <= '9') {
    if (*value > (INT64_MAX - 9) / 10) return 0;
    *value = *value * 10 + (*j->at++ - '0');
  }
  return j->at > start;
}

/* Skip any JSON value (the metadata, fields this reader does not know); 0 when malformed. */
static int tessel_json_skip(tessel_json* j, int depth) {
  tessel_json_space(j);
  if (j->at >= j->end || depth > TESSEL_API_MAX_DEPTH) return 0;
  char c = *j->at;
  if (c == '"') {
    unsigned char* text;
    size_t length;
    if (!tessel_json_string(j, &text, &length)) return 0;
    free(text);
    return 1;
  }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    ++j->at;
    if (tessel_json_take(j, close)) return 1;
    do {
      if (c == '{' && !(tessel_json_skip(j, depth + 1) && tessel_json_take(j, ':'))) return 0;
      if (!tessel_json_skip(j, depth + 1)) return 0;
    } while (tessel_json_take(j, ','));
    return tessel_json_take(j, close);
  }
  const char* start = j->at;  /* a number, true, false or null */
  while (j->at < j->end && strchr("0123456789+-.eEtruefalsn", *j->at) != NULL && *j->at) ++j->at;
  return j->at > start;
}

/* What the header says of one tensor: `ndim` extents, the first `capacity` (the weight's
   rank) kept in `shape`. */
typedef struct {
  unsigned char* dtype;
  size_t dtype_length;
  int32_t ndim;
  int64_t* shape;
  int32_t capacity;
  int64_t begin, end;
  int has_offsets;
} tessel_st_entry;

/* `[n, n, ...]`: the first `capacity` values into `values`, all of them counted in *count. */
static int tessel_json_counts(tessel_json* j, int64_t* values, int capacity, int32_t* count) {
  *count = 0;
  if (!tessel_json_take(j, '[')) return 0;
  if (tessel_json_take(j, ']')) return 1;
  do {
    int64_t value;
    if (*count == INT32_MAX || !tessel_json_count(j, &value)) return 0;
    if (*count < capacity) values[*count] = value;
    ++*count;
  } while (tessel_json_take(j, ','));
  return tessel_json_take(j, ']');
}

static int tessel_st_field(tessel_json* j, tessel_st_entry* entry) {
  unsigned char* key;
  size_t length;
  if (!tessel_json_string(j, &key, &length)) return 0;
  int ok = tessel_json_take(j, ':');
  if (ok && length == 5 && memcmp(key, "dtype", 5) == 0 && entry->dtype == NULL) {
    ok = tessel_json_string(j, &entry->dtype, &entry->dtype_length);
  } else if (ok && length == 5 && memcmp(key, "shape", 5) == 0) {
    ok = tessel_json_counts(j, entry->shape, entry->capacity, &entry->ndim);
  } else if (ok && length == 12 && memcmp(key, "data_offsets", 12) == 0) {
    int64_t offsets[2];
    int32_t count;
    ok = tessel_json_counts(j, offsets, 2, &count) && count == 2;
    entry->begin = offsets[0];
    entry->end = offsets[1];
    entry->has_offsets = ok;
  } else if (ok) {
    ok = tessel_json_skip(j, 1);
  }
  free(key);
  return ok;
}

static int tessel_st_entry_parse(tessel_json* j, tessel_st_entry* entry) {
  if (!tessel_json_take(j, '{')) return 0;
  if (tessel_json_take(j, '}')) return 1;
  do {
    if (!tessel_st_field(j, entry)) return 0;
  } while (tessel_json_take(j, ','));
  return tessel_json_take(j, '}');
}

/* Check one header entry against weight `w` and copy its bytes into `storage`. */
static int tessel_st_weight(const tessel_api_weight_table* weights, int w,
                            const tessel_st_entry* e, const unsigned char* data,
                            size_t data_size, unsigned char* storage) {
  const tessel_model_tensor_info* t = &weights->infos[w];
  const char* want = weights->st_dtypes[w];
  if (e->dtype == NULL || e->ndim < 0 || !e->has_offsets) {
    tessel_api_error("weight %d (`%.200s`): its header entry lacks dtype, shape or offsets", w,
                     t->name);
    return 0;
  }
  if (e->dtype_length != strlen(want) || memcmp(e->dtype, want, e->dtype_length) != 0) {
    tessel_api_error("weight %d (`%.200s`): dtype %.16s in the file, the model needs %s", w,
                     t->name, (const char*)e->dtype, want);
    return 0;
  }
  int same = e->ndim == t->ndim;
  for (int32_t k = 0; same && k < t->ndim; ++k) same = e->shape[k] == t->shape[k];
  if (!same) {
    tessel_api_error("weight %d (`%.200s`): its shape in the file differs from the model's", w,
                     t->name);
    return 0;
  }
  if (e->begin > e->end || (uint64_t)e->end > data_size ||
      (uint64_t)(e->end - e->begin) != (uint64_t)t->nbytes) {
    tessel_api_error("weight %d (`%.200s`): bytes [%lld, %lld) of %llu: %llu needed", w,
                     t->name, (long long)e->begin, (long long)e->end,
                     (unsigned long long)data_size, (unsigned long long)t->nbytes);
    return 0;
  }
  memcpy(storage + weights->offsets[w], data + e->begin, t->nbytes);
  return 1;
}

/* One `"name": {...}` of the header: a weight of the model is checked and copied, metadata and
   other tensors are skipped. */
static int tessel_st_item(const tessel_api_weight_table* weights, tessel_json* j,
                          const unsigned char* data, size_t data_size, unsigned char* storage,
                          int* found) {
  unsigned char* name;
  size_t length;
  if (!tessel_json_string(j, &name, &length) || !tessel_json_take(j, ':')) {
    free(name);
    tessel_api_error("the safetensors header is not valid JSON");
    return 0;
  }
  int w = -1;
  for (int k = 0; k < weights->count && w < 0; ++k) {
    const tessel_model_tensor_info* t = &weights->infos[k];
    if (t->name_length == length && memcmp(t->name, name, length) == 0) w = k;
  }
  free(name);
  if (w < 0) {
    if (tessel_json_skip(j, 1)) return 1;
    tessel_api_error("the safetensors header is not valid JSON");
    return 0;
  }
  if (found[w]) {
    tessel_api_error("weight %d (`%.200s`) is twice in the file", w, weights->infos[w].name);
    return 0;
  }
  tessel_st_entry entry;
  memset(&entry, 0, sizeof(entry));
  entry.ndim = -1;
  entry.capacity = weights->infos[w].ndim;
  entry.shape = malloc(sizeof(int64_t) * (size_t)(entry.capacity + 1));
  if (entry.shape == NULL) {
    tessel_api_error("out of memory reading the safetensors header");
    return 0;
  }
  int ok = tessel_st_entry_parse(j, &entry);
  if (!ok) tessel_api_error("the safetensors header is not valid JSON");
  ok = ok && tessel_st_weight(weights, w, &entry, data, data_size, storage);
  free(entry.dtype);
  free(entry.shape);
  found[w] = ok;
  return ok;
}

static int tessel_st_load(const tessel_api_weight_table* weights, const unsigned char* bytes,
                          size_t size, unsigned char* storage) {
  uint64_t header = 0;
  for (int k = 7; k >= 0 && size >= 8; --k) header = header << 8 | bytes[k];
  if (size < 8 || header > size - 8) {
    tessel_api_error("not a safetensors file: its header length exceeds the file");
    return 0;
  }
  tessel_json j = {(const char*)bytes + 8, (const char*)bytes + 8 + header};
  const unsigned char* data = bytes + 8 + header;
  size_t data_size = size - 8 - (size_t)header;
  int* found = calloc((size_t)weights->count + 1, sizeof(int));
  if (found == NULL) {
    tessel_api_error("out of memory reading the safetensors header");
    return 0;
  }
  int ok = tessel_json_take(&j, '{');
  if (ok && !tessel_json_take(&j, '}')) {
    do {
      ok = tessel_st_item(weights, &j, data, data_size, storage, found);
    } while (ok && tessel_json_take(&j, ','));
    ok = ok && tessel_json_take(&j, '}');
  }
  if (!ok && tessel_error_message[0] == 0)
    tessel_api_error("the safetensors header is not valid JSON");
  for (int w = 0; ok && w < weights->count; ++w) {
    if (!found[w]) {
      tessel_api_error("the weights file has no tensor `%.200s` (weight %d)",
                       weights->infos[w].name, w);
      ok = 0;
    }
  }
  free(found);
  return ok;
}

/* params.bin: every weight's raw bytes, concatenated in order, and nothing else. */
static int tessel_raw_load(const tessel_api_weight_table* weights, const unsigned char* bytes,
                           size_t size, unsigned char* storage) {
  size_t offset = 0;
  for (int w = 0; w < weights->count; ++w) offset += weights->infos[w].nbytes;
  if (offset != size) {
    tessel_api_error("params.bin holds %llu bytes; the model's weights are %llu",
                     (unsigned long long)size, (unsigned long long)offset);
    return 0;
  }
  offset = 0;
  for (int w = 0; w < weights->count; ++w) {
    memcpy(storage + weights->offsets[w], bytes + offset, weights->infos[w].nbytes);
    offset += weights->infos[w].nbytes;
  }
  return 1;
}

TESSEL_INTERNAL unsigned char* tessel_api_load_weights(const char* path,
                                                       const tessel_api_weight_table* weights) {
  size_t size, length = strlen(path);
  unsigned char* bytes = tessel_api_read_file(path, &size);
  if (bytes == NULL) return NULL;
  size_t total = (weights->bytes / TESSEL_API_ALIGNMENT + 1) * TESSEL_API_ALIGNMENT;
  unsigned char* storage = aligned_alloc(TESSEL_API_ALIGNMENT, total);
  tessel_error_message[0] = 0;
  int raw = length >= 4 && strcmp(path + length - 4, ".bin") == 0;
  int ok = storage != NULL && (raw ? tessel_raw_load(weights, bytes, size, storage)
                                   : tessel_st_load(weights, bytes, size, storage));
  if (storage == NULL) tessel_api_error("out of memory for the weights (%llu bytes)",
                                        (unsigned long long)total);
  free(bytes);
  if (!ok) {
    free(storage);
    return NULL;
  }
  return storage;
}
"""

# The reader's translation unit: what it includes and declares, then the reader.
LOADER_UNIT = "\n".join(
    [
        "#include <stdarg.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        VISIBILITY,
        ERROR_MESSAGE_DECLARATION,
        TENSOR_INFO_TYPE,
        API_DECLARATIONS,
        _READER,
    ]
)

__all__ = ["API_DECLARATIONS", "LOADER_UNIT", "TENSOR_INFO_TYPE"]
