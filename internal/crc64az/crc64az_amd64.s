//go:build amd64

#include "textflag.h"

// FOLD moves block X by the distance of the multipliers in K onto the
// block loaded in D: X = clmul(X.lo, K.lo) ^ clmul(X.hi, K.hi) ^ D. T is
// scratch.
#define FOLD(X, K, T, D) \
	MOVO      X, T;  \
	PCLMULQDQ $0x00, K, X; \
	PCLMULQDQ $0x11, K, T; \
	PXOR      T, X;  \
	PXOR      D, X

// FOLDDOWN folds the first of eight blocks in turn onto each of the next
// seven with F (FOLD or VFOLD) and multipliers K, leaving the sum in A.
#define FOLDDOWN(F, A, K, T, B1, B2, B3, B4, B5, B6, B7) \
	F(A, K, T, B1); \
	F(A, K, T, B2); \
	F(A, K, T, B3); \
	F(A, K, T, B4); \
	F(A, K, T, B5); \
	F(A, K, T, B6); \
	F(A, K, T, B7)

// FOLDLOAD folds X by 1024 bits (X8) onto the 16 bytes at off(SI); the
// legacy SSE encoding takes no unaligned memory operand, so they are
// loaded first.
#define FOLDLOAD(X, off) \
	MOVOU off(SI), X10; \
	FOLD(X, X8, X14, X10)

// func foldCLMUL(crc uint64, p []byte, k *[8]uint64) (lo, hi uint64)
TEXT ·foldCLMUL(SB), NOSPLIT, $0-56
	MOVQ crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	MOVOU 0(DX), X8  // d = 1024
	MOVOU 16(DX), X9 // d = 128

	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVOU 64(SI), X4
	MOVOU 80(SI), X5
	MOVOU 96(SI), X6
	MOVOU 112(SI), X7
	MOVQ  AX, X10
	PXOR  X10, X0
	ADDQ  $128, SI
	SUBQ  $128, CX

loop128:
	CMPQ CX, $128
	JB   fold8
	FOLDLOAD(X0, 0)
	FOLDLOAD(X1, 16)
	FOLDLOAD(X2, 32)
	FOLDLOAD(X3, 48)
	FOLDLOAD(X4, 64)
	FOLDLOAD(X5, 80)
	FOLDLOAD(X6, 96)
	FOLDLOAD(X7, 112)
	ADDQ $128, SI
	SUBQ $128, CX
	JMP  loop128

fold8:
	// Each block onto the next, down to X7; the sum in X0.
	FOLDDOWN(FOLD, X0, X9, X14, X1, X2, X3, X4, X5, X6, X7)

loop16:
	CMPQ  CX, $16
	JB    done
	MOVOU 0(SI), X10
	FOLD(X0, X9, X14, X10)
	ADDQ  $16, SI
	SUBQ  $16, CX
	JMP   loop16

done:
	MOVQ   X0, lo+40(FP)
	PSRLDQ $8, X0
	MOVQ   X0, hi+48(FP)
	RET

// VFOLD is FOLD in the AVX encoding, on 16-byte (X) or 32-byte (Y)
// blocks: X = clmul(X.lo, K.lo) ^ clmul(X.hi, K.hi) ^ D, each 128-bit lane
// apart. D may be memory (no alignment needed).
#define VFOLD(X, K, T, D) \
	VPCLMULQDQ $0x00, K, X, T; \
	VPCLMULQDQ $0x11, K, X, X; \
	VPXOR      T, X, X; \
	VPXOR      D, X, X

// func foldVPCLMUL(crc uint64, p []byte, k *[8]uint64) (lo, hi uint64)
TEXT ·foldVPCLMUL(SB), NOSPLIT, $0-56
	MOVQ crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX

	VBROADCASTI128 32(DX), Y8 // d = 2048, both lanes
	VBROADCASTI128 48(DX), Y9 // d = 256

	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VMOVDQU 128(SI), Y4
	VMOVDQU 160(SI), Y5
	VMOVDQU 192(SI), Y6
	VMOVDQU 224(SI), Y7
	VMOVQ   AX, X10 // the upper 192 bits zero
	VPXOR   Y10, Y0, Y0
	ADDQ    $256, SI
	SUBQ    $256, CX

wloop256:
	CMPQ CX, $256
	JB   wfold8
	VFOLD(Y0, Y8, Y10, 0(SI))
	VFOLD(Y1, Y8, Y11, 32(SI))
	VFOLD(Y2, Y8, Y12, 64(SI))
	VFOLD(Y3, Y8, Y13, 96(SI))
	VFOLD(Y4, Y8, Y10, 128(SI))
	VFOLD(Y5, Y8, Y11, 160(SI))
	VFOLD(Y6, Y8, Y12, 192(SI))
	VFOLD(Y7, Y8, Y13, 224(SI))
	ADDQ $256, SI
	SUBQ $256, CX
	JMP  wloop256

wfold8:
	// Each 32-byte block onto the next, down to Y7 in Y0.
	FOLDDOWN(VFOLD, Y0, Y9, Y10, Y1, Y2, Y3, Y4, Y5, Y6, Y7)

	// Its first lane onto its second, then 16 bytes at a time.
	VMOVDQU      16(DX), X9 // d = 128
	VEXTRACTI128 $1, Y0, X1
	VFOLD(X0, X9, X10, X1)

wloop16:
	CMPQ CX, $16
	JB   wdone
	VFOLD(X0, X9, X10, 0(SI))
	ADDQ $16, SI
	SUBQ $16, CX
	JMP  wloop16

wdone:
	VMOVQ   X0, lo+40(FP)
	VPEXTRQ $1, X0, hi+48(FP)
	VZEROUPPER
	RET
