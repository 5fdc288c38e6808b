package survey

// SourcePin is a repository at one commit.
type SourcePin struct {
	Upstream string `json:"upstream"`
	Commit   string `json:"commit"`
}

// FixCheck answers "would a fix be visible?": the discriminator is run on
// two builds of the same implementation recorded in the same testbed, one
// carrying a §9.4 reset patch and one without it. The check holds when the
// patched build's trace shows an exact reset and the unpatched one none:
// then a live NO is a property of the code, not a blind spot of the check.
type FixCheck struct {
	Statement string `json:"statement"`
	// Patch is the patch's path in the study's repository.
	Patch     string     `json:"patch,omitempty"`
	Patched   Repetition `json:"patched"`
	Unpatched Repetition `json:"unpatched"`
	Visible   bool       `json:"visible"`
}
