// What tinyt's IR can do today: build index arithmetic as UOps and let the symbolic engine
// simplify it, the way the scheduler will turn movement ops into index math.
#include <iostream>

#include <tinyt.hpp>

using namespace tinyt;

int main() {
  // A 16x4 tensor viewed as 64 elements, then as 8x8: element (i, j) of the 8x8 view reads
  // flat position i*8 + j, which is row (i*8+j)//4, column (i*8+j)%4 of the 16x4 buffer; the
  // buffer's offset of that is row*4 + column.
  UOp i = Variable("i", 0, 7), j = Variable("j", 0, 7);
  UOp flat = i * 8 + j;
  UOp offset = flat.idiv(4) * 4 + flat % 4;
  std::cout << "16x4 buffer read through an 8x8 view\n";
  std::cout << "  index as built:  " << offset << "\n";
  std::cout << "  simplified:      " << simplify(offset) << "\n";

  // A pad of 2 on each side of a 12-element row: the load is valid where 2 <= x < 14, and under
  // that mask the index (x-2) needs no clamping; a mask clause the other implies disappears.
  UOp x = Variable("x", 0, 15);
  UOp valid = x.lt(2).logical_not() & x.lt(14) & x.lt(15);
  std::cout << "padded row, valid where " << valid << "\n";
  std::cout << "  mask simplified: " << simplify_valid(valid) << "\n";
  std::cout << "  (x-2)//12 there: " << uop_given_valid(valid, (x - 2).idiv(12)) << "\n";

  // Bounds of an expression, and constant folding with int8 wraparound as a kernel would do it.
  UOp row = Variable("row", 0, 1023);
  UOp e = (row * 3 + 5) % 7;
  std::cout << "bounds of " << e << ": [" << static_cast<long long>(vmin(e)) << ", "
            << static_cast<long long>(vmax(e)) << "]\n";
  UOp wrapped = simplify(UOp::const_(dtypes::int8, 100) + UOp::const_(dtypes::int8, 100));
  std::cout << "int8 100 + 100 folds to " << wrapped << "\n";
  return 0;
}
