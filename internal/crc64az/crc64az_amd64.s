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

// func foldCLMUL(crc uint64, p []byte, k *[4]uint64) (lo, hi uint64)
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
	CMPQ  CX, $128
	JB    fold8
	MOVOU 0(SI), X10
	MOVOU 16(SI), X11
	MOVOU 32(SI), X12
	MOVOU 48(SI), X13
	FOLD(X0, X8, X14, X10)
	FOLD(X1, X8, X15, X11)
	FOLD(X2, X8, X14, X12)
	FOLD(X3, X8, X15, X13)
	MOVOU 64(SI), X10
	MOVOU 80(SI), X11
	MOVOU 96(SI), X12
	MOVOU 112(SI), X13
	FOLD(X4, X8, X14, X10)
	FOLD(X5, X8, X15, X11)
	FOLD(X6, X8, X14, X12)
	FOLD(X7, X8, X15, X13)
	ADDQ  $128, SI
	SUBQ  $128, CX
	JMP   loop128

fold8:
	// Each block onto the next, down to X7.
	FOLD(X0, X9, X14, X1)
	FOLD(X0, X9, X14, X2)
	FOLD(X0, X9, X14, X3)
	FOLD(X0, X9, X14, X4)
	FOLD(X0, X9, X14, X5)
	FOLD(X0, X9, X14, X6)
	FOLD(X0, X9, X14, X7)

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
