/* test_piece_cuda.c - tests/test_piece.c on the CUDA renderer: random grids split into
 * 1..7 sort-last pieces, each piece's partial image rendered on the device with its
 * ownership box, composited front to back and compared with the single CUDA render (and
 * every sample taken once). Needs a GPU (make test-gpu). */
#define VX_PIECE_CUDA 1
#include "../test_piece.c"
