package model

// The gemma3 family (Gemma 3 text models): Gemma 2's block without soft
// capping (unless the file states a final_logit_softcapping), with an
// RMSNorm over each query and key head before RoPE, and when the file
// states attention.sliding_window, five windowed layers to one global
// (layers 5, 11, 17, … are global), the windowed ones rotating with base
// 10000 and no scaling while the global ones take the file's base and
// its (linear) rope scaling, as llama.cpp does.
func init() {
	register(&Family{
		Arch:     "gemma3",
		RopeNeoX: true,
		Block:    append(gemmaBlock(), wQNorm, wKNorm),
		Hyper: func(r reader, c *Config, k func(string) string) error {
			gemmaCommon(c, 62)
			if err := readScale(r, k("final_logit_softcapping"), &c.FinalSoftcap); err != nil {
				return err
			}
			var err error
			if c.NSWA, err = r.count(k("attention.sliding_window"), 0, MaxCtx, 0); err != nil {
				return err
			}
			if c.NSWA > 0 {
				c.SWAPattern = 6
				c.RopeBaseSWA, c.RopeScaleSWA = 10000, 1
			}
			return nil
		},
	})
}
