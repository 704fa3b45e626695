// Part of engine/tools/gen-opcode-names: prints what llvm-mc cannot show, LLVM's own
// `MCInstPrinter::getMnemonic` (the asm string up to the first operand, which BOLT's
// `hashBlockLoose` hashes with whitespace removed) and, with PROBE_REGS=1 in the environment,
// every register's MC number and name.
//
// Input: one instruction per line as hex bytes. Output per line:
// OPCODE_NAME <TAB> mnemonic-without-whitespace (or "?" and "?" when LLVM does not decode it).
// Built by the generator against the libLLVM of each release (see main.rs).
#include "llvm/Config/llvm-config.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <string>

#if LLVM_VERSION_MAJOR >= 21
#define MNEMONIC(P, I) (P)->getMnemonic(I)
#else
#define MNEMONIC(P, I) (P)->getMnemonic(&(I))
#endif

using namespace llvm;

int main() {
  InitializeAllTargetInfos();
  InitializeAllTargetMCs();
  InitializeAllDisassemblers();
  std::string Err;
  Triple TT("x86_64-unknown-linux-gnu");
  const Target *T = TargetRegistry::lookupTarget(TT.getTriple(), Err);
  if (!T) {
    errs() << Err << "\n";
    return 1;
  }
  std::unique_ptr<MCRegisterInfo> MRI(T->createMCRegInfo(TT.getTriple()));
  if (std::getenv("PROBE_REGS")) {
    for (unsigned R = 1; R < MRI->getNumRegs(); ++R)
      outs() << R << "\t" << MRI->getName(R) << "\n";
    return 0;
  }
  MCTargetOptions Opts;
  std::unique_ptr<MCAsmInfo> MAI(T->createMCAsmInfo(*MRI, TT.getTriple(), Opts));
  std::unique_ptr<MCSubtargetInfo> STI(T->createMCSubtargetInfo(TT.getTriple(), "", ""));
  std::unique_ptr<MCInstrInfo> MII(T->createMCInstrInfo());
  MCContext Ctx(TT, MAI.get(), MRI.get(), STI.get());
  std::unique_ptr<MCDisassembler> D(T->createMCDisassembler(*STI, Ctx));
  std::unique_ptr<MCInstPrinter> P(T->createMCInstPrinter(TT, 0, *MAI, *MII, *MRI));
  std::string Line;
  while (std::getline(std::cin, Line)) {
    std::vector<uint8_t> Bytes;
    for (size_t I = 0; I + 1 < Line.size(); I += 2)
      Bytes.push_back(std::stoi(Line.substr(I, 2), nullptr, 16));
    MCInst Inst;
    uint64_t Size = 0;
    if (D->getInstruction(Inst, Size, ArrayRef<uint8_t>(Bytes), 0x1000, nulls()) !=
            MCDisassembler::Success ||
        Size != Bytes.size()) {
      outs() << "?\t?\n";
      continue;
    }
    auto M = MNEMONIC(P, Inst);
    std::string Mnemonic;
    for (const char *C = M.first; C && *C; ++C)
      if (!std::isspace((unsigned char)*C))
        Mnemonic.push_back(*C);
    outs() << MII->getName(Inst.getOpcode()) << "\t" << Mnemonic << "\n";
  }
  return 0;
}
