/* run_model: load a model that Tessel exported (CompiledModel.export), run it once through the
   C API, and print (or write) its outputs.

     run_model <model dir> [--out <dir>] [input files...]

   Input k is read from the k-th file (raw little-endian values, exactly the input's size), or,
   with no file, made up deterministically: element j of input k is ((j * 7 + k * 3) % 17) / 8 - 1
   (as the dtype: float32, float64, int32, int64; other dtypes are zeros). With --out, output k
   is written raw to <dir>/output_<k>.bin; every output's name, dtype, shape and first values
   are printed. See README.md next to this file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* A name as printable ASCII (model names may hold anything: quotes, newlines, NUL). */
static void print_name(const tessel_model_tensor_info* t) {
  putchar('"');
  for (size_t i = 0; i < t->name_length && i < 80; ++i) {
    unsigned char c = (unsigned char)t->name[i];
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') putchar(c);
    else printf("\\x%02x", c);
  }
  printf(t->name_length > 80 ? "\"..." : "\"");
}

static void print_info(const char* kind, int index, const tessel_model_tensor_info* t) {
  printf("%s %d ", kind, index);
  print_name(t);
  printf(" %s [", t->dtype);
  for (int32_t d = 0; d < t->ndim; ++d) printf(d ? ", %lld" : "%lld", (long long)t->shape[d]);
  printf("]\n");
}

static int read_input(const char* path, void* data, size_t nbytes) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return 0;
  size_t got = fread(data, 1, nbytes, file);
  int extra = fgetc(file) != EOF;
  fclose(file);
  return got == nbytes && !extra;
}

static void make_input(const tessel_model_tensor_info* t, int k, void* data) {
  memset(data, 0, t->nbytes);
  for (size_t j = 0; j * 4 < t->nbytes; ++j) {
    double value = (double)((j * 7 + (size_t)k * 3) % 17) / 8.0 - 1.0;
    long long whole = (long long)((j * 7 + (size_t)k * 3) % 17);
    if (strcmp(t->dtype, "float32") == 0) ((float*)data)[j] = (float)value;
    else if (strcmp(t->dtype, "int32") == 0) ((int32_t*)data)[j] = (int32_t)whole;
    else if (strcmp(t->dtype, "float64") == 0 && j * 8 < t->nbytes) ((double*)data)[j] = value;
    else if (strcmp(t->dtype, "int64") == 0 && j * 8 < t->nbytes) ((int64_t*)data)[j] = whole;
  }
}

static void print_values(const tessel_model_tensor_info* t, const void* data) {
  if (strcmp(t->dtype, "float32") != 0) return;
  size_t count = t->nbytes / 4;
  for (size_t j = 0; j < count && j < 8; ++j) printf("  %.9g\n", ((const float*)data)[j]);
  if (count > 8) printf("  ... (%zu values)\n", count);
}

static int write_output(const char* dir, int k, const tessel_model_tensor_info* t,
                        const void* data) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/output_%d.bin", dir, k);
  FILE* file = fopen(path, "wb");
  if (file == NULL) return 0;
  int ok = fwrite(data, 1, t->nbytes, file) == t->nbytes;
  return fclose(file) == 0 && ok;
}

static void* allocate(size_t nbytes) { return aligned_alloc(64, (nbytes / 64 + 1) * 64); }

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <model dir> [--out <dir>] [input files...]\n", argv[0]);
    return 2;
  }
  const char* out_dir = NULL;
  int first_input = 2;
  if (argc >= 4 && strcmp(argv[2], "--out") == 0) {
    out_dir = argv[3];
    first_input = 4;
  }
  char params[4096];
  snprintf(params, sizeof(params), "%s/params.safetensors", argv[1]);
  FILE* probe = fopen(params, "rb");
  if (probe != NULL) fclose(probe);  /* no params file: the weights are linked into model.so */
  tessel_model* model = tessel_model_create(probe != NULL ? params : NULL);
  if (model == NULL) {
    fprintf(stderr, "cannot load the model: %s\n", tessel_model_last_error());
    return 1;
  }
  int num_inputs = tessel_model_num_inputs(), num_outputs = tessel_model_num_outputs();
  const void** inputs = calloc((size_t)num_inputs + 1, sizeof(void*));
  void** outputs = calloc((size_t)num_outputs + 1, sizeof(void*));
  int status = 0;
  for (int k = 0; k < num_inputs && status == 0; ++k) {
    const tessel_model_tensor_info* t = tessel_model_input_info(k);
    void* data = allocate(t->nbytes);
    inputs[k] = data;
    print_info("input", k, t);
    if (first_input + k < argc && !read_input(argv[first_input + k], data, t->nbytes)) {
      fprintf(stderr, "cannot read %zu bytes of input %d from %s\n", t->nbytes, k,
              argv[first_input + k]);
      status = 1;
    } else if (first_input + k >= argc) {
      make_input(t, k, data);
    }
  }
  for (int k = 0; k < num_outputs; ++k) outputs[k] = allocate(tessel_model_output_info(k)->nbytes);
  if (status == 0 && tessel_model_run(model, inputs, outputs) != 0) {
    fprintf(stderr, "the model failed: %s\n", tessel_model_last_error());
    status = 1;
  }
  for (int k = 0; k < num_outputs && status == 0; ++k) {
    const tessel_model_tensor_info* t = tessel_model_output_info(k);
    print_info("output", k, t);
    print_values(t, outputs[k]);
    if (out_dir != NULL && !write_output(out_dir, k, t, outputs[k])) {
      fprintf(stderr, "cannot write output %d into %s\n", k, out_dir);
      status = 1;
    }
  }
  for (int k = 0; k < num_inputs; ++k) free((void*)inputs[k]);
  for (int k = 0; k < num_outputs; ++k) free(outputs[k]);
  free(inputs);
  free(outputs);
  tessel_model_destroy(model);
  return status;
}
