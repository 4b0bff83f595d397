CREATE TABLE `settings` (
	`author_id` integer PRIMARY KEY NOT NULL,
	`prefs` text NOT NULL,
	`public` integer DEFAULT false NOT NULL,
	`since` integer NOT NULL,
	FOREIGN KEY (`author_id`) REFERENCES `authors`(`id`) ON UPDATE no action ON DELETE cascade
);
